#pragma once
/// \file Reading the components of a tokenizer.json: each accessor names the JSON path of what
/// is missing or wrong ("pre_tokenizer.pretokenizers[1].type"), so a refused file says where.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/models/tokenizers/pipeline/patterns.h>

namespace ctrainer::tokenizers {

/// Thrown for a component the pipeline cannot read; the loader adds the file's name.
class TokenizerJsonError : public std::runtime_error {
 public:
  TokenizerJsonError(const std::string& path, const std::string& what)
      : std::runtime_error(path + ": " + what), path_(path) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// `path` + "." + `key` (or `key` at the root).
std::string json_child(const std::string& path, const std::string& key);
/// `path` + "[i]".
std::string json_item(const std::string& path, size_t i);

/// The object's "type", which must be one of `known`; throws naming the path and the choices.
std::string json_type(const nlohmann::json& j, const std::string& path,
                      std::initializer_list<const char*> known, const char* what);

/// Required and optional fields of an object, with their kinds checked.
const nlohmann::json& json_field(const nlohmann::json& j, const std::string& path,
                                 const std::string& key);
std::string json_string(const nlohmann::json& j, const std::string& path, const std::string& key);
std::optional<std::string> json_optional_string(const nlohmann::json& j, const std::string& path,
                                                const std::string& key);
bool json_bool(const nlohmann::json& j, const std::string& path, const std::string& key,
               std::optional<bool> fallback = std::nullopt);
std::optional<bool> json_optional_bool(const nlohmann::json& j, const std::string& path,
                                       const std::string& key);
int64_t json_int(const nlohmann::json& j, const std::string& path, const std::string& key,
                 std::optional<int64_t> fallback = std::nullopt);
const nlohmann::json& json_array(const nlohmann::json& j, const std::string& path,
                                 const std::string& key);
/// The one character of a string field (Metaspace's replacement, Strip's content).
char32_t json_char(const nlohmann::json& j, const std::string& path, const std::string& key);

/// The components of a Sequence's list `key`, each read by `from_json(item, item_path)`; a null
/// item is refused (a Sequence of nothing is written as an empty list).
template <typename Component, typename FromJson>
std::vector<std::shared_ptr<const Component>> json_sequence(const nlohmann::json& j,
                                                            const std::string& path,
                                                            const std::string& key,
                                                            FromJson&& from_json) {
  const auto& list = json_array(j, path, key);
  const std::string where = json_child(path, key);
  std::vector<std::shared_ptr<const Component>> parts;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].is_null()) throw TokenizerJsonError(json_item(where, i), "null in a Sequence");
    parts.push_back(from_json(list[i], json_item(where, i)));
  }
  return parts;
}

/// A pattern field: {"String": "..."} or {"Regex": "..."}.
Pattern json_pattern(const nlohmann::json& j, const std::string& path, const std::string& key);
nlohmann::json pattern_to_json(const Pattern& pattern);

}  // namespace ctrainer::tokenizers
