#pragma once
/// \file The T5 family in the model registry: model_type "t5", its config behind the
/// ModelConfig interface, and T5ForConditionalGeneration (AutoModelForSeq2SeqLM).
#include <ctrainer/models/t5/t5_config.h>
#include <ctrainer/models/typed_model_config.h>

namespace ctrainer {

class ModelRegistry;

/// A T5Config behind the ModelConfig interface.
using T5ModelConfig = TypedModelConfig<T5Config>;

/// Adds model_type "t5" to `registry` (builtin_families.cpp calls it).
void register_t5_family(ModelRegistry& registry);

}  // namespace ctrainer
