#include <ctrainer/models/config_json.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <ctrainer/core/errors.h>

namespace ctrainer::config_json {
namespace {

using json = nlohmann::json;

const std::set<std::string> kProblemTypes = {"regression", "single_label_classification",
                                             "multi_label_classification"};

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

template <typename T, typename Read>
void read_optional_with(const json& j, const char* key, std::optional<T>& out,
                        const std::string& source, Read read) {
  if (!j.contains(key)) return;
  if (j.at(key).is_null()) {
    out.reset();
    return;
  }
  T value{};
  read(j, key, value, source);
  out = value;
}

}  // namespace

void fail(const std::string& source, const std::string& what) {
  throw ArgumentError(source + ": " + what);
}

std::string shown(const json& value) {
  std::string s = value.dump();
  return s.size() > 80 ? s.substr(0, 80) + "..." : s;
}

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

void read_bool(const json& j, const char* key, bool& out, const std::string& source) {
  if (!j.contains(key)) return;
  const json& v = j.at(key);
  if (!v.is_boolean())
    fail(source, std::string("'") + key + "' must be true or false, got " + shown(v));
  out = v.get<bool>();
}

void read_string(const json& j, const char* key, std::string& out, const std::string& source) {
  if (!j.contains(key)) return;
  const json& v = j.at(key);
  if (!v.is_string()) fail(source, std::string("'") + key + "' must be a string, got " + shown(v));
  out = v.get<std::string>();
}

void read_optional(const json& j, const char* key, std::optional<int64_t>& out,
                   const std::string& source) {
  read_optional_with(j, key, out, source, read_int);
}

void read_optional(const json& j, const char* key, std::optional<double>& out,
                   const std::string& source) {
  read_optional_with(j, key, out, source, read_double);
}

void read_optional(const json& j, const char* key, std::optional<std::string>& out,
                   const std::string& source) {
  read_optional_with(j, key, out, source, read_string);
}

void read_token_ids(const json& j, const char* key, json& out, const std::string& source) {
  if (!j.contains(key)) return;
  const json& ids = j.at(key);
  bool ok = ids.is_null() || ids.is_number_integer() || ids.is_array();
  if (ids.is_array())
    for (const json& id : ids) ok = ok && id.is_number_integer();
  if (!ok)
    fail(source, std::string("'") + key + "' must be an integer, a list of integers or null, got " +
                     shown(ids));
  out = ids;
}

void check_positive(const std::string& source, const char* key, int64_t value) {
  if (value < 1)
    fail(source, std::string("'") + key + "' must be >= 1, got " + std::to_string(value));
}

void check_probability(const std::string& source, const char* key, double value) {
  if (!(value >= 0.0 && value <= 1.0))
    fail(source, std::string("'") + key + "' must be in [0, 1], got " + std::to_string(value));
}

void check_token_id(const std::string& source, const char* key, std::optional<int64_t> id,
                    int64_t vocab_size) {
  if (id && (*id < 0 || *id >= vocab_size))
    fail(source, std::string("'") + key + "' " + std::to_string(*id) +
                     " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
}

json optional_json(const std::optional<int64_t>& value) {
  return value ? json(*value) : json(nullptr);
}

void check_model_type(const json& j, const std::string& expected, const std::string& family_name,
                      const std::string& source) {
  if (!j.contains("model_type")) return;
  std::string model_type;
  read_string(j, "model_type", model_type, source);
  if (model_type != expected)
    fail(source, "'model_type' is \"" + model_type + "\"; a " + family_name + " model needs \"" +
                     expected + "\"");
}

void TaskHeadFields::set_num_labels(int64_t n) {
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

void TaskHeadFields::set_label_names(const std::vector<std::string>& names) {
  if (names.empty()) throw ArgumentError("id2label needs at least one label");
  if (static_cast<int64_t>(names.size()) > kMaxNumLabels)
    throw ArgumentError(std::to_string(names.size()) + " labels are more than ctrainer supports (" +
                        std::to_string(kMaxNumLabels) + ")");
  id2label = names;
  label2id = default_label2id(id2label);
}

void TaskHeadFields::read(const json& j, const std::string& source) {
  read_optional(j, "problem_type", problem_type, source);
  if (j.contains("id2label") && !j.at("id2label").is_null()) {
    id2label = parse_id2label(j.at("id2label"), source);
    label2id = default_label2id(id2label);
  } else if (j.contains("num_labels")) {
    int64_t n = 0;
    read_int(j, "num_labels", n, source);
    if (n < 1 || n > kMaxNumLabels)
      fail(source, "'num_labels' must be in [1, " + std::to_string(kMaxNumLabels) + "], got " +
                       std::to_string(n));
    set_num_labels(n);
  }
  if (j.contains("label2id") && !j.at("label2id").is_null())
    label2id = parse_label2id(j.at("label2id"), source);
}

void TaskHeadFields::write(json& j) const {
  json id2label_json = json::object();
  for (size_t i = 0; i < id2label.size(); ++i) id2label_json[std::to_string(i)] = id2label[i];
  json label2id_json = json::object();
  for (const auto& [name, id] : label2id) label2id_json[name] = id;
  j["problem_type"] = problem_type ? json(*problem_type) : json(nullptr);
  j["id2label"] = id2label_json;
  j["label2id"] = label2id_json;
}

void TaskHeadFields::validate(const std::string& source) const {
  if (problem_type && kProblemTypes.count(*problem_type) == 0)
    fail(source, "'problem_type' \"" + *problem_type +
                     "\" is not one of regression, single_label_classification, "
                     "multi_label_classification");
  if (id2label.empty()) fail(source, "'id2label' must have at least one label");
}

const std::vector<std::string>& TaskHeadFields::keys() {
  static const std::vector<std::string> kKeys = {"problem_type", "id2label", "label2id",
                                                 "num_labels"};
  return kKeys;
}

json unknown_keys(const json& j, const std::vector<std::string>& known) {
  json extra = json::object();
  for (const auto& [key, value] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end() &&
        std::find(TaskHeadFields::keys().begin(), TaskHeadFields::keys().end(), key) ==
            TaskHeadFields::keys().end())
      extra[key] = value;
  return extra;
}

json read_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ArgumentError("cannot read model config " + path + " (missing or unreadable)");
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    throw ArgumentError("model config " + path + " is not valid JSON: " + e.what());
  }
}

}  // namespace ctrainer::config_json
