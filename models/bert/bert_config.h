#pragma once
/// \file BertConfig: the hyper-parameters of a BERT model, read from and written to Hugging Face's
/// config.json (transformers.BertConfig field names and defaults). Keys this struct does not know
/// (architectures, transformers_version, torch_dtype, ...) are kept and written back on save.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/models/config_json.h>

namespace ctrainer {

/// HF BertConfig. Defaults are those of bert-base-uncased (= transformers' defaults). The
/// task-head fields (id2label, label2id, problem_type, num_labels) come from TaskHeadFields.
struct BertConfig : config_json::TaskHeadFields {
  /// The most labels a config may ask for (config_json::kMaxNumLabels).
  static constexpr int64_t kMaxNumLabels = config_json::kMaxNumLabels;
  static constexpr const char* kModelType = "bert";

  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  /// "gelu" (exact, erf), "gelu_new" (tanh approximation) or "relu".
  std::string hidden_act = "gelu";
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  double initializer_range = 0.02;
  /// Padding id of the word embeddings (its row starts at zero and gets no gradient); HF allows
  /// null.
  std::optional<int64_t> pad_token_id = 0;
  /// Dropout before the classification head; unset means hidden_dropout_prob (HF).
  std::optional<double> classifier_dropout;
  /// Every config.json key not listed above, written back unchanged by to_json().
  nlohmann::json extra = nlohmann::json::object();

  /// The longest input the position embeddings allow.
  std::optional<int64_t> max_positions() const { return max_position_embeddings; }
  /// hidden_size / num_attention_heads.
  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  /// classifier_dropout, or hidden_dropout_prob when unset.
  double effective_classifier_dropout() const {
    return classifier_dropout.value_or(hidden_dropout_prob);
  }

  /// Checks every value (positive sizes, probabilities in [0, 1], hidden_size divisible by
  /// num_attention_heads, a known hidden_act and problem_type, consistent label maps). Throws
  /// ArgumentError naming `source` (e.g. the config.json path), the key and the fix.
  void validate(const std::string& source = "BertConfig") const;

  /// The config as HF writes config.json: model_type "bert", every field above (id2label keys
  /// as strings, nulls for unset optionals), then the unknown keys kept in `extra`.
  nlohmann::json to_json() const;

  /// Parses a config.json object. Missing keys keep their defaults; a wrong type, a bad value or a
  /// model_type other than "bert" throws ArgumentError naming `source` and the key. HF's
  /// "num_labels" key is honoured when id2label is absent.
  static BertConfig from_json(const nlohmann::json& json,
                              const std::string& source = "config.json");

  /// Reads `path` (a config.json file). An unreadable file or invalid JSON throws ArgumentError
  /// naming the file.
  static BertConfig from_json_file(const std::string& path);

  /// Writes to_json() to `path`, pretty-printed like HF (2-space indent, sorted keys). Throws
  /// std::runtime_error naming the file when it cannot be written.
  void save(const std::string& path) const;
};

}  // namespace ctrainer
