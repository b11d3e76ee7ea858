#include <ctrainer/models/bert/bert_config.h>

#include <fstream>
#include <set>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>

namespace ctrainer {
namespace {

using json = nlohmann::json;

const std::set<std::string> kHiddenActs = {"gelu", "gelu_new", "relu"};
const std::set<std::string> kProblemTypes = {"regression", "single_label_classification",
                                             "multi_label_classification"};

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw ArgumentError(source + ": " + what);
}

std::string shown(const json& value) {
  std::string s = value.dump();
  return s.size() > 80 ? s.substr(0, 80) + "..." : s;
}

// Typed readers: a present key of the wrong type is an error that names the key and the value.
void read_int(const json& j, const char* key, int64_t& out, const std::string& source) {
  if (!j.contains(key)) return;
  const json& v = j.at(key);
  if (!v.is_number_integer())
    fail(source, std::string("'") + key + "' must be an integer, got " + shown(v));
  out = v.get<int64_t>();
}

void read_double(const json& j, const char* key, double& out, const std::string& source) {
  if (!j.contains(key)) return;
  const json& v = j.at(key);
  if (!v.is_number()) fail(source, std::string("'") + key + "' must be a number, got " + shown(v));
  out = v.get<double>();
}

void read_string(const json& j, const char* key, std::string& out, const std::string& source) {
  if (!j.contains(key)) return;
  const json& v = j.at(key);
  if (!v.is_string()) fail(source, std::string("'") + key + "' must be a string, got " + shown(v));
  out = v.get<std::string>();
}

template <typename T>
void read_optional(const json& j, const char* key, std::optional<T>& out,
                   const std::string& source) {
  if (!j.contains(key)) return;
  if (j.at(key).is_null()) {
    out.reset();
    return;
  }
  T value{};
  if constexpr (std::is_same_v<T, int64_t>) read_int(j, key, value, source);
  if constexpr (std::is_same_v<T, double>) read_double(j, key, value, source);
  if constexpr (std::is_same_v<T, std::string>) read_string(j, key, value, source);
  out = value;
}

// HF writes id2label with string keys ("0": "NEGATIVE"); the ids must be exactly 0..n-1.
std::vector<std::string> parse_id2label(const json& v, const std::string& source) {
  if (!v.is_object()) fail(source, "'id2label' must be an object {\"0\": \"name\", ...}");
  std::map<int64_t, std::string> by_id;
  for (const auto& [key, name] : v.items()) {
    int64_t id = -1;
    try {
      size_t used = 0;
      id = std::stoll(key, &used);
      if (used != key.size()) id = -1;
    } catch (const std::exception&) {
    }
    if (id < 0) fail(source, "'id2label' key '" + key + "' is not a non-negative integer");
    if (!name.is_string()) fail(source, "'id2label' value for " + key + " must be a string");
    by_id[id] = name.get<std::string>();
  }
  std::vector<std::string> out;
  for (const auto& [id, name] : by_id) {
    if (id != static_cast<int64_t>(out.size()))
      fail(source, "'id2label' ids must be 0.." + std::to_string(by_id.size() - 1) +
                       " without gaps; id " + std::to_string(out.size()) + " is missing");
    out.push_back(name);
  }
  return out;
}

std::map<std::string, int64_t> parse_label2id(const json& v, const std::string& source) {
  if (!v.is_object()) fail(source, "'label2id' must be an object {\"name\": 0, ...}");
  std::map<std::string, int64_t> out;
  for (const auto& [name, id] : v.items()) {
    if (!id.is_number_integer())
      fail(source, "'label2id' value for '" + name + "' must be an integer");
    out[name] = id.get<int64_t>();
  }
  return out;
}

std::map<std::string, int64_t> default_label2id(const std::vector<std::string>& id2label) {
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i < id2label.size(); ++i) out[id2label[i]] = static_cast<int64_t>(i);
  return out;
}

// The keys from_json() consumes; everything else goes to `extra`.
const std::set<std::string> kKnownKeys = {"model_type",
                                          "vocab_size",
                                          "hidden_size",
                                          "num_hidden_layers",
                                          "num_attention_heads",
                                          "intermediate_size",
                                          "hidden_act",
                                          "hidden_dropout_prob",
                                          "attention_probs_dropout_prob",
                                          "max_position_embeddings",
                                          "type_vocab_size",
                                          "layer_norm_eps",
                                          "initializer_range",
                                          "pad_token_id",
                                          "classifier_dropout",
                                          "problem_type",
                                          "id2label",
                                          "label2id",
                                          "num_labels"};

}  // namespace

void BertConfig::set_num_labels(int64_t n) {
  if (n < 1) throw ArgumentError("num_labels must be >= 1, got " + std::to_string(n));
  // One name per label is built below: a count from a config file must not exhaust memory.
  if (n > kMaxNumLabels)
    throw ArgumentError("num_labels " + std::to_string(n) + " is more than ctrainer supports (" +
                        std::to_string(kMaxNumLabels) + ")");
  if (n == num_labels()) return;
  id2label.clear();
  for (int64_t i = 0; i < n; ++i) id2label.push_back("LABEL_" + std::to_string(i));
  label2id = default_label2id(id2label);
}

void BertConfig::validate(const std::string& source) const {
  auto positive = [&](const char* key, int64_t v) {
    if (v < 1) fail(source, std::string("'") + key + "' must be >= 1, got " + std::to_string(v));
  };
  positive("vocab_size", vocab_size);
  positive("hidden_size", hidden_size);
  positive("num_hidden_layers", num_hidden_layers);
  positive("num_attention_heads", num_attention_heads);
  positive("intermediate_size", intermediate_size);
  positive("max_position_embeddings", max_position_embeddings);
  positive("type_vocab_size", type_vocab_size);
  if (hidden_size % num_attention_heads != 0)
    fail(source, "'hidden_size' (" + std::to_string(hidden_size) +
                     ") must be a multiple of 'num_attention_heads' (" +
                     std::to_string(num_attention_heads) + ")");
  if (kHiddenActs.count(hidden_act) == 0)
    fail(source,
         "'hidden_act' \"" + hidden_act + "\" is not supported; use gelu, gelu_new or relu");
  auto probability = [&](const char* key, double p) {
    if (!(p >= 0.0 && p <= 1.0))
      fail(source, std::string("'") + key + "' must be in [0, 1], got " + std::to_string(p));
  };
  probability("hidden_dropout_prob", hidden_dropout_prob);
  probability("attention_probs_dropout_prob", attention_probs_dropout_prob);
  if (classifier_dropout) probability("classifier_dropout", *classifier_dropout);
  if (!(layer_norm_eps > 0.0)) fail(source, "'layer_norm_eps' must be > 0");
  if (!(initializer_range >= 0.0)) fail(source, "'initializer_range' must be >= 0");
  if (pad_token_id && (*pad_token_id < 0 || *pad_token_id >= vocab_size))
    fail(source, "'pad_token_id' " + std::to_string(*pad_token_id) +
                     " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
  if (problem_type && kProblemTypes.count(*problem_type) == 0)
    fail(source, "'problem_type' \"" + *problem_type +
                     "\" is not one of regression, single_label_classification, "
                     "multi_label_classification");
  if (id2label.empty()) fail(source, "'id2label' must have at least one label");
}

nlohmann::json BertConfig::to_json() const {
  json j = extra.is_object() ? extra : json::object();
  json id2label_json = json::object();
  for (size_t i = 0; i < id2label.size(); ++i) id2label_json[std::to_string(i)] = id2label[i];
  json label2id_json = json::object();
  for (const auto& [name, id] : label2id) label2id_json[name] = id;
  j["model_type"] = "bert";
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["intermediate_size"] = intermediate_size;
  j["hidden_act"] = hidden_act;
  j["hidden_dropout_prob"] = hidden_dropout_prob;
  j["attention_probs_dropout_prob"] = attention_probs_dropout_prob;
  j["max_position_embeddings"] = max_position_embeddings;
  j["type_vocab_size"] = type_vocab_size;
  j["layer_norm_eps"] = layer_norm_eps;
  j["initializer_range"] = initializer_range;
  j["pad_token_id"] = pad_token_id ? json(*pad_token_id) : json(nullptr);
  j["classifier_dropout"] = classifier_dropout ? json(*classifier_dropout) : json(nullptr);
  j["problem_type"] = problem_type ? json(*problem_type) : json(nullptr);
  j["id2label"] = id2label_json;
  j["label2id"] = label2id_json;
  return j;
}

BertConfig BertConfig::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "a config must be a JSON object, got " + shown(j));
  BertConfig c;
  if (j.contains("model_type")) {
    std::string model_type;
    read_string(j, "model_type", model_type, source);
    if (model_type != "bert")
      fail(source, "'model_type' is \"" + model_type + "\"; a BERT model needs \"bert\"");
  }
  read_int(j, "vocab_size", c.vocab_size, source);
  read_int(j, "hidden_size", c.hidden_size, source);
  read_int(j, "num_hidden_layers", c.num_hidden_layers, source);
  read_int(j, "num_attention_heads", c.num_attention_heads, source);
  read_int(j, "intermediate_size", c.intermediate_size, source);
  read_string(j, "hidden_act", c.hidden_act, source);
  read_double(j, "hidden_dropout_prob", c.hidden_dropout_prob, source);
  read_double(j, "attention_probs_dropout_prob", c.attention_probs_dropout_prob, source);
  read_int(j, "max_position_embeddings", c.max_position_embeddings, source);
  read_int(j, "type_vocab_size", c.type_vocab_size, source);
  read_double(j, "layer_norm_eps", c.layer_norm_eps, source);
  read_double(j, "initializer_range", c.initializer_range, source);
  read_optional(j, "pad_token_id", c.pad_token_id, source);
  read_optional(j, "classifier_dropout", c.classifier_dropout, source);
  read_optional(j, "problem_type", c.problem_type, source);
  if (j.contains("id2label") && !j.at("id2label").is_null()) {
    c.id2label = parse_id2label(j.at("id2label"), source);
    c.label2id = default_label2id(c.id2label);
  } else if (j.contains("num_labels")) {
    int64_t n = 0;
    read_int(j, "num_labels", n, source);
    if (n < 1 || n > kMaxNumLabels)
      fail(source, "'num_labels' must be in [1, " + std::to_string(kMaxNumLabels) + "], got " +
                       std::to_string(n));
    c.set_num_labels(n);
  }
  if (j.contains("label2id") && !j.at("label2id").is_null())
    c.label2id = parse_label2id(j.at("label2id"), source);
  // HF accepts only absolute position embeddings for the BERT classes we implement.
  if (j.contains("position_embedding_type") && j.at("position_embedding_type") != "absolute")
    fail(source, "'position_embedding_type' " + shown(j.at("position_embedding_type")) +
                     " is not supported; only \"absolute\"");
  for (const auto& [key, value] : j.items())
    if (kKnownKeys.count(key) == 0) c.extra[key] = value;
  c.validate(source);
  return c;
}

BertConfig BertConfig::from_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ArgumentError("cannot read model config " + path + " (missing or unreadable)");
  json j;
  try {
    j = json::parse(in);
  } catch (const std::exception& e) {
    throw ArgumentError("model config " + path + " is not valid JSON: " + e.what());
  }
  return from_json(j, "model config " + path);
}

void BertConfig::save(const std::string& path) const {
  write_json_file(path, to_json());
}

}  // namespace ctrainer
