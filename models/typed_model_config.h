#pragma once
/// \file A family's typed config behind the ModelConfig interface: one template instead of one
/// hand-written wrapper per family. `Config` derives from config_json::TaskHeadFields and has
/// kModelType, vocab_size, max_positions(), extra, to_json() and validate(source).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/model_config.h>
#include <ctrainer/models/registry/model_registry.h>

namespace ctrainer {

template <typename Config>
class TypedModelConfig : public ModelConfig {
 public:
  explicit TypedModelConfig(Config config) : config(std::move(config)) {}

  std::string model_type() const override { return Config::kModelType; }
  nlohmann::json to_json() const override { return config.to_json(); }
  void validate(const std::string& source) const override { config.validate(source); }
  std::unique_ptr<ModelConfig> clone() const override {
    return std::make_unique<TypedModelConfig>(config);
  }
  int64_t vocab_size() const override { return config.vocab_size; }
  std::optional<int64_t> max_positions() const override { return config.max_positions(); }
  int64_t num_labels() const override { return config.num_labels(); }
  std::vector<std::string> id2label() const override { return config.id2label; }
  void set_num_labels(int64_t n) override { config.set_num_labels(n); }
  void set_label_names(const std::vector<std::string>& names) override {
    config.set_label_names(names);
  }
  void set_extra(const std::string& key, const nlohmann::json& value) override {
    config.extra[key] = value;
  }

  Config config;
};

/// The `Config` inside `config`; throws ArgumentError when it belongs to another family.
template <typename Config>
const Config& typed_config_of(const ModelConfig& config) {
  if (const auto* typed = dynamic_cast<const TypedModelConfig<Config>*>(&config))
    return typed->config;
  throw ArgumentError(std::string("a model of model_type \"") + Config::kModelType +
                      "\" cannot be built from a config of model_type \"" + config.model_type() +
                      "\"");
}

/// The ModelArchitecture of a head class `Head` of the family whose typed config is `Config`:
/// built by `Head(config)` (new weights) and `Head::from_pretrained(config, path,
/// ignore_mismatched_sizes)`.
template <typename Head, typename Config>
ModelArchitecture typed_architecture(const std::string& name, ModelTask task) {
  ModelArchitecture a;
  a.name = name;
  a.task = task;
  a.create = [](const ModelConfig& config) -> std::shared_ptr<Model> {
    return std::make_shared<Head>(typed_config_of<Config>(config));
  };
  a.from_pretrained = [](const ModelConfig& config, const std::string& path,
                         bool ignore_mismatched_sizes) -> std::shared_ptr<Model> {
    return Head::from_pretrained(typed_config_of<Config>(config), path, ignore_mismatched_sizes);
  };
  return a;
}

}  // namespace ctrainer
