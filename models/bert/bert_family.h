#pragma once
/// \file The BERT family in the model registry: model_type "bert", its config behind the
/// ModelConfig interface, and its heads (BertForSequenceClassification).
#include <memory>

#include <ctrainer/models/bert/bert_config.h>
#include <ctrainer/models/model_config.h>

namespace ctrainer {

class ModelRegistry;

/// A BertConfig behind the ModelConfig interface; `config` is the typed struct itself.
class BertModelConfig : public ModelConfig {
 public:
  explicit BertModelConfig(BertConfig config) : config(std::move(config)) {}

  std::string model_type() const override { return "bert"; }
  nlohmann::json to_json() const override { return config.to_json(); }
  void validate(const std::string& source) const override { config.validate(source); }
  std::unique_ptr<ModelConfig> clone() const override {
    return std::make_unique<BertModelConfig>(config);
  }
  int64_t vocab_size() const override { return config.vocab_size; }
  std::optional<int64_t> max_positions() const override { return config.max_position_embeddings; }
  int64_t num_labels() const override { return config.num_labels(); }
  std::vector<std::string> id2label() const override { return config.id2label; }
  void set_num_labels(int64_t n) override { config.set_num_labels(n); }
  void set_label_names(const std::vector<std::string>& names) override;
  void set_extra(const std::string& key, const nlohmann::json& value) override {
    config.extra[key] = value;
  }

  BertConfig config;
};

/// The BertConfig inside `config`; throws ArgumentError when it belongs to another family.
const BertConfig& bert_config_of(const ModelConfig& config);

/// Adds model_type "bert" to `registry` (builtin_families.cpp calls it).
void register_bert_family(ModelRegistry& registry);

}  // namespace ctrainer
