#pragma once
/// \file ModelConfig: a model family's config.json behind one interface, for the registry, the
/// Auto* functions and programs that work with any family (run_glue). Each family keeps its own
/// typed struct (BertConfig, ...) with HF's field names; its ModelConfig wraps one.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer {

class ModelConfig {
 public:
  virtual ~ModelConfig() = default;

  /// config.json's model_type ("bert").
  virtual std::string model_type() const = 0;
  /// The config as transformers writes config.json.
  virtual nlohmann::json to_json() const = 0;
  /// Checks every value; throws ArgumentError naming `source`, the key and the fix.
  virtual void validate(const std::string& source) const = 0;
  virtual std::unique_ptr<ModelConfig> clone() const = 0;

  /// Rows of the token embedding (HF vocab_size).
  virtual int64_t vocab_size() const = 0;
  /// The longest input the position embeddings allow; none for models without a limit.
  virtual std::optional<int64_t> max_positions() const = 0;

  /// HF PretrainedConfig's task-head fields, shared by every family.
  virtual int64_t num_labels() const = 0;
  virtual std::vector<std::string> id2label() const = 0;
  /// HF's num_labels setter: when the count changes, labels become LABEL_0..LABEL_{n-1}.
  virtual void set_num_labels(int64_t n) = 0;
  /// Names the labels by id (id2label, and label2id to match).
  virtual void set_label_names(const std::vector<std::string>& names) = 0;
  /// Sets a config.json key that the family does not model (finetuning_task, ...).
  virtual void set_extra(const std::string& key, const nlohmann::json& value) = 0;
};

}  // namespace ctrainer
