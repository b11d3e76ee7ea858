#include <ctrainer/models/tokenizers/pipeline/json_fields.h>

#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>
#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer::tokenizers {

std::string json_child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string json_item(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string json_type(const nlohmann::json& j, const std::string& path,
                      std::initializer_list<const char*> known, const char* what) {
  std::string choices;
  for (const char* k : known) choices += (choices.empty() ? "" : ", ") + std::string(k);
  if (!j.is_object())
    throw TokenizerJsonError(path, std::string("expected a ") + what +
                                       " object (types: " + choices + "), got " + j.dump());
  const std::string type = json_string(j, path, "type");
  for (const char* k : known)
    if (type == k) return type;
  throw TokenizerJsonError(json_child(path, "type"), std::string("unsupported ") + what + " \"" +
                                                         type + "\" (supported: " + choices + ")");
}

const nlohmann::json& json_field(const nlohmann::json& j, const std::string& path,
                                 const std::string& key) {
  if (!j.is_object()) throw TokenizerJsonError(path, "expected an object, got " + j.dump());
  const auto it = j.find(key);
  if (it == j.end()) throw TokenizerJsonError(json_child(path, key), "missing");
  return *it;
}

std::string json_string(const nlohmann::json& j, const std::string& path, const std::string& key) {
  const auto& v = json_field(j, path, key);
  if (!v.is_string())
    throw TokenizerJsonError(json_child(path, key), "expected a string, got " + v.dump());
  const auto s = v.get<std::string>();
  if (unicode::first_invalid_utf8(s))
    throw TokenizerJsonError(json_child(path, key), "not valid UTF-8");
  return s;
}

std::optional<std::string> json_optional_string(const nlohmann::json& j, const std::string& path,
                                                const std::string& key) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return json_string(j, path, key);
}

bool json_bool(const nlohmann::json& j, const std::string& path, const std::string& key,
               std::optional<bool> fallback) {
  if (fallback && (!j.is_object() || !j.contains(key))) return *fallback;
  const auto& v = json_field(j, path, key);
  if (!v.is_boolean())
    throw TokenizerJsonError(json_child(path, key), "expected true or false, got " + v.dump());
  return v.get<bool>();
}

std::optional<bool> json_optional_bool(const nlohmann::json& j, const std::string& path,
                                       const std::string& key) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return json_bool(j, path, key);
}

int64_t json_int(const nlohmann::json& j, const std::string& path, const std::string& key,
                 std::optional<int64_t> fallback) {
  if (fallback && (!j.is_object() || !j.contains(key) || j.at(key).is_null())) return *fallback;
  const auto& v = json_field(j, path, key);
  if (!v.is_number_integer())
    throw TokenizerJsonError(json_child(path, key), "expected an integer, got " + v.dump());
  return v.get<int64_t>();
}

const nlohmann::json& json_array(const nlohmann::json& j, const std::string& path,
                                 const std::string& key) {
  const auto& v = json_field(j, path, key);
  if (!v.is_array())
    throw TokenizerJsonError(json_child(path, key), "expected an array, got " + v.dump());
  return v;
}

char32_t json_char(const nlohmann::json& j, const std::string& path, const std::string& key) {
  const std::u32string chars = to_u32(json_string(j, path, key));
  if (chars.size() != 1)
    throw TokenizerJsonError(json_child(path, key),
                             "expected a single character, got \"" + to_utf8(chars) + "\"");
  return chars[0];
}

Pattern json_pattern(const nlohmann::json& j, const std::string& path, const std::string& key) {
  const auto& v = json_field(j, path, key);
  const std::string where = json_child(path, key);
  if (v.is_object() && v.size() == 1 && v.contains("String")) {
    return Pattern::literal(json_string(v, where, "String"));
  }
  if (v.is_object() && v.size() == 1 && v.contains("Regex")) {
    const std::string expression = json_string(v, where, "Regex");
    try {
      return Pattern::expression(expression);
    } catch (const std::exception& e) {
      throw TokenizerJsonError(json_child(where, "Regex"), e.what());
    }
  }
  throw TokenizerJsonError(where,
                           "expected {\"String\": ...} or {\"Regex\": ...}, got " + v.dump());
}

nlohmann::json pattern_to_json(const Pattern& pattern) {
  return {{pattern.kind == Pattern::Kind::kRegex ? "Regex" : "String", pattern.text}};
}

}  // namespace ctrainer::tokenizers
