#pragma once
/// \file The GPT-2 family in the model registry: model_type "gpt2", its config behind the
/// ModelConfig interface, and its heads (GPT2LMHeadModel, GPT2ForSequenceClassification).
#include <memory>

#include <ctrainer/models/gpt2/gpt2_config.h>
#include <ctrainer/models/typed_model_config.h>

namespace ctrainer {

class ModelRegistry;

/// A GPT2Config behind the ModelConfig interface.
using GPT2ModelConfig = TypedModelConfig<GPT2Config>;

/// The GPT2Config inside `config`; throws ArgumentError when it belongs to another family.
inline const GPT2Config& gpt2_config_of(const ModelConfig& config) {
  return typed_config_of<GPT2Config>(config);
}

/// Adds model_type "gpt2" to `registry` (builtin_families.cpp calls it).
void register_gpt2_family(ModelRegistry& registry);

}  // namespace ctrainer
