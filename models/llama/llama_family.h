#pragma once
/// \file The Llama family in the model registry: model_type "llama", its config behind the
/// ModelConfig interface, and its heads (LlamaForCausalLM, LlamaForSequenceClassification).
#include <memory>

#include <ctrainer/models/llama/llama_config.h>
#include <ctrainer/models/typed_model_config.h>

namespace ctrainer {

class ModelRegistry;

/// A LlamaConfig behind the ModelConfig interface.
using LlamaModelConfig = TypedModelConfig<LlamaConfig>;

/// The LlamaConfig inside `config`; throws ArgumentError when it belongs to another family.
inline const LlamaConfig& llama_config_of(const ModelConfig& config) {
  return typed_config_of<LlamaConfig>(config);
}

/// Adds model_type "llama" to `registry` (builtin_families.cpp calls it).
void register_llama_family(ModelRegistry& registry);

}  // namespace ctrainer
