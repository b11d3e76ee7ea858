#pragma once
/// \file The BART family in the model registry: model_type "bart", its config behind the
/// ModelConfig interface, and BartForConditionalGeneration (AutoModelForSeq2SeqLM).
#include <ctrainer/models/bart/bart_config.h>
#include <ctrainer/models/typed_model_config.h>

namespace ctrainer {

class ModelRegistry;

/// A BartConfig behind the ModelConfig interface.
using BartModelConfig = TypedModelConfig<BartConfig>;

/// Adds model_type "bart" to `registry` (builtin_families.cpp calls it).
void register_bart_family(ModelRegistry& registry);

}  // namespace ctrainer
