#pragma once
/// \file Reading and writing the parts of a config.json that every model family shares: typed
/// readers that name the key and the value on a type error, and HF PretrainedConfig's task-head
/// fields (id2label, label2id, num_labels, problem_type).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer::config_json {

/// The most labels a config may ask for (num_labels; transformers has no limit, but every label
/// gets a name in id2label and label2id).
inline constexpr int64_t kMaxNumLabels = 1'000'000;

/// Throws ArgumentError "<source>: <what>".
[[noreturn]] void fail(const std::string& source, const std::string& what);
/// `value` as JSON text, cut at 80 characters, for messages.
std::string shown(const nlohmann::json& value);

/// Set `out` from key `key` of `j` when present; a value of the wrong type throws ArgumentError
/// naming `source`, the key and the value. read_optional maps null to unset.
void read_int(const nlohmann::json& j, const char* key, int64_t& out, const std::string& source);
void read_double(const nlohmann::json& j, const char* key, double& out, const std::string& source);
void read_bool(const nlohmann::json& j, const char* key, bool& out, const std::string& source);
void read_string(const nlohmann::json& j, const char* key, std::string& out,
                 const std::string& source);
void read_optional(const nlohmann::json& j, const char* key, std::optional<int64_t>& out,
                   const std::string& source);
void read_optional(const nlohmann::json& j, const char* key, std::optional<double>& out,
                   const std::string& source);
void read_optional(const nlohmann::json& j, const char* key, std::optional<std::string>& out,
                   const std::string& source);

/// An id or a list of ids (eos_token_id: Llama 3.1 lists several) or null, kept as written;
/// anything else is an ArgumentError naming the key.
void read_token_ids(const nlohmann::json& j, const char* key, nlohmann::json& out,
                    const std::string& source);

/// ArgumentError "<source>: '<key>' must be >= 1, got <value>" unless value >= 1.
void check_positive(const std::string& source, const char* key, int64_t value);
/// ArgumentError "<source>: '<key>' must be in [0, 1], got <value>" unless it is (NaN is not).
void check_probability(const std::string& source, const char* key, double value);

/// ArgumentError naming `key` unless the id, when set, is inside the vocabulary [0, vocab_size).
void check_token_id(const std::string& source, const char* key, std::optional<int64_t> id,
                    int64_t vocab_size);
/// An optional id as config.json writes it: the number, or null.
nlohmann::json optional_json(const std::optional<int64_t>& value);

/// Checks config.json's model_type, when present, is `expected` (the family's).
void check_model_type(const nlohmann::json& j, const std::string& expected,
                      const std::string& family_name, const std::string& source);

/// HF PretrainedConfig's task-head fields.
struct TaskHeadFields {
  /// "regression", "single_label_classification" or "multi_label_classification"; unset means
  /// inferred from num_labels and the labels' dtype at the first forward with labels (HF).
  std::optional<std::string> problem_type;
  /// Label names by id; its size is num_labels. Default: LABEL_0, LABEL_1 (HF's num_labels = 2).
  std::vector<std::string> id2label = {"LABEL_0", "LABEL_1"};
  /// Label ids by name (HF keeps both maps in config.json).
  std::map<std::string, int64_t> label2id = {{"LABEL_0", 0}, {"LABEL_1", 1}};

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
  /// HF's num_labels setter: when the count changes, id2label/label2id become
  /// LABEL_0..LABEL_{n-1}. Throws ArgumentError when n < 1 or n > kMaxNumLabels.
  void set_num_labels(int64_t n);
  /// Names the labels by id (id2label, and label2id to match); throws ArgumentError when empty.
  void set_label_names(const std::vector<std::string>& names);
  /// Reads id2label (else num_labels), label2id and problem_type from `j`.
  void read(const nlohmann::json& j, const std::string& source);
  /// Writes problem_type, id2label (string keys, as HF) and label2id into `j`.
  void write(nlohmann::json& j) const;
  /// A known problem_type and at least one label.
  void validate(const std::string& source) const;
  /// The keys read() consumes.
  static const std::vector<std::string>& keys();
};

/// Every key of `j` neither in `known` nor a task-head key, for a config's `extra` (written
/// back unchanged).
nlohmann::json unknown_keys(const nlohmann::json& j, const std::vector<std::string>& known);

/// Reads and parses the JSON file `path`; an unreadable file or invalid JSON throws
/// ArgumentError naming it.
nlohmann::json read_config_file(const std::string& path);

}  // namespace ctrainer::config_json
