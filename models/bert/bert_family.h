#pragma once
/// \file The BERT family in the model registry: model_type "bert", its config behind the
/// ModelConfig interface, and its heads (BertForSequenceClassification).
#include <memory>

#include <ctrainer/models/bert/bert_config.h>
#include <ctrainer/models/typed_model_config.h>

namespace ctrainer {

class ModelRegistry;

/// A BertConfig behind the ModelConfig interface; `config` is the typed struct itself.
using BertModelConfig = TypedModelConfig<BertConfig>;

/// The BertConfig inside `config`; throws ArgumentError when it belongs to another family.
inline const BertConfig& bert_config_of(const ModelConfig& config) {
  return typed_config_of<BertConfig>(config);
}

/// Adds model_type "bert" to `registry` (builtin_families.cpp calls it).
void register_bert_family(ModelRegistry& registry);

}  // namespace ctrainer
