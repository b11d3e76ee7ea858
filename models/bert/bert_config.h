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

namespace ctrainer {

/// HF BertConfig. Defaults are those of bert-base-uncased (= transformers' defaults).
struct BertConfig {
  /// The most labels a config may ask for (num_labels; transformers has no limit, but every label
  /// gets a name in id2label and label2id).
  static constexpr int64_t kMaxNumLabels = 1'000'000;

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
  /// "regression", "single_label_classification" or "multi_label_classification"; unset means
  /// inferred from num_labels and the labels' dtype at the first forward with labels (HF).
  std::optional<std::string> problem_type;
  /// Label names by id; its size is num_labels. Default: LABEL_0, LABEL_1 (HF's num_labels = 2).
  std::vector<std::string> id2label = {"LABEL_0", "LABEL_1"};
  /// Label ids by name (HF keeps both maps in config.json).
  std::map<std::string, int64_t> label2id = {{"LABEL_0", 0}, {"LABEL_1", 1}};
  /// Every config.json key not listed above, written back unchanged by to_json().
  nlohmann::json extra = nlohmann::json::object();

  /// Number of classification outputs (HF's config.num_labels = len(id2label)).
  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
  /// HF's num_labels setter: when the count changes, id2label/label2id become LABEL_0..LABEL_{n-1}.
  /// Throws ArgumentError when n < 1 or n > kMaxNumLabels.
  void set_num_labels(int64_t n);
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
