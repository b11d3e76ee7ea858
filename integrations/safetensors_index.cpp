#include <ctrainer/integrations/safetensors_index.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <regex>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>

#include <ctrainer/core/confined_path.h>
#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/integrations/safetensors.h>

namespace ctrainer {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSingleFile = "model.safetensors";

std::string shard_file_name(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

/// What an earlier save_pretrained may have left: model.safetensors, the index, and shards.
bool is_weights_file(const std::string& name) {
  static const std::regex shard(R"(model-\d{5}-of-\d{5}\.safetensors)");
  return name == kSingleFile || name == kSafetensorsIndexFile || std::regex_match(name, shard);
}

}  // namespace

std::int64_t parse_shard_size(const std::string& text, const std::string& what) {
  const auto fail = [&](const std::string& why) -> std::int64_t {
    throw ArgumentError(what + " " + (text.empty() ? "\"\"" : text) + ": " + why +
                        "; give a size such as \"5GB\", \"500MB\" (units KB, MB, GB, TB are "
                        "powers of 1000) or a number of bytes");
  };
  std::string trimmed = text;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back())))
    trimmed.pop_back();
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front())))
    trimmed.erase(trimmed.begin());
  static const std::regex bytes(R"([0-9]+)");
  static const std::regex sized(R"(([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*([kKmMgGtT][bB]))");
  std::smatch match;
  double value = 0;
  if (std::regex_match(trimmed, bytes)) {
    if (trimmed.size() > 18) return fail("too large");
    value = std::stod(trimmed);
  } else if (std::regex_match(trimmed, match, sized)) {
    const char unit =
        static_cast<char>(std::toupper(static_cast<unsigned char>(match[3].str()[0])));
    const double multiplier = unit == 'K' ? 1e3 : unit == 'M' ? 1e6 : unit == 'G' ? 1e9 : 1e12;
    value = std::stod(match[1].str()) * multiplier;
  } else {
    return fail("not a size");
  }
  if (!(value >= 1) || value > 9.0e18) return fail("must be at least 1 byte and below 9 EB");
  return static_cast<std::int64_t>(value);  // int(value * multiplier), as huggingface_hub
}

SafetensorsSplit split_into_shards(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                   std::int64_t max_shard_bytes) {
  SafetensorsSplit split;
  std::vector<std::vector<std::string>> shards;
  std::vector<std::string> current;
  std::int64_t current_bytes = 0;
  for (const auto& [name, tensor] : tensors) {
    const std::int64_t bytes = static_cast<std::int64_t>(tensor.numel()) *
                               static_cast<std::int64_t>(tensor.element_size());
    split.total_size += bytes;
    if (bytes > max_shard_bytes) {  // alone, in a shard larger than the limit
      shards.push_back({name});
      continue;
    }
    if (current_bytes + bytes > max_shard_bytes) {
      shards.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
    current.push_back(name);
    current_bytes += bytes;
  }
  if (!current.empty()) shards.push_back(std::move(current));
  if (shards.empty()) shards.emplace_back();  // an empty model still gets its (empty) file
  for (size_t i = 0; i < shards.size(); ++i)
    split.shards.push_back({shards.size() == 1 ? kSingleFile : shard_file_name(i, shards.size()),
                            std::move(shards[i])});
  return split;
}

SafetensorsSplit save_safetensors_shards(
    const fs::path& dir, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
    std::int64_t max_shard_bytes, std::int64_t total_parameters,
    const std::map<std::string, std::string>& metadata) {
  SafetensorsSplit split = split_into_shards(tensors, max_shard_bytes);
  std::map<std::string, at::Tensor> by_name(tensors.begin(), tensors.end());
  nlohmann::json weight_map = nlohmann::json::object();
  std::set<std::string> written;
  for (const SafetensorsShard& shard : split.shards) {
    std::map<std::string, at::Tensor> part;
    for (const std::string& name : shard.names) {
      part.emplace(name, by_name.at(name));
      weight_map[name] = shard.file_name;
    }
    save_safetensors((dir / shard.file_name).string(), part, metadata);
    written.insert(shard.file_name);
  }
  if (split.sharded()) {
    write_json_file(
        dir / kSafetensorsIndexFile,
        {{"metadata", {{"total_parameters", total_parameters}, {"total_size", split.total_size}}},
         {"weight_map", weight_map}});
    written.insert(kSafetensorsIndexFile);
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (is_weights_file(name) && !written.count(name) && entry.is_regular_file(ec))
      fs::remove(entry.path(), ec);
  }
  return split;
}

std::map<std::string, at::Tensor> load_safetensors_shards(const fs::path& index_file) {
  const std::string where = "sharded checkpoint index " + index_file.string();
  nlohmann::json index;
  try {
    index = read_json_file(index_file, "sharded checkpoint index");
  } catch (const std::runtime_error& e) {
    throw ArgumentError(std::string(e.what()) +
                        "; restore it, or save the model again with save_pretrained");
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw ArgumentError(where +
                        " has no \"weight_map\" object (tensor name -> shard file); it is not "
                        "a transformers model.safetensors.index.json");
  const fs::path folder = index_file.parent_path().empty() ? "." : index_file.parent_path();
  std::map<std::string, std::set<std::string>> names_by_file;
  for (const auto& [name, file] : index["weight_map"].items()) {
    if (!file.is_string())
      throw ArgumentError(where + ": weight_map[\"" + name + "\"] is " + file.dump() +
                          ", not a shard file name");
    const std::string file_name = file.get<std::string>();
    std::string why;
    if (file_name.find('/') != std::string::npos || file_name.find('\\') != std::string::npos ||
        !path_inside(folder, file_name, &why))
      throw ArgumentError(where + ": weight_map[\"" + name + "\"] names \"" + file_name +
                          "\", which is not a file of the index's own folder" +
                          (why.empty() ? "" : " (" + why + ")") +
                          "; shards must lie next to the index");
    names_by_file[file_name].insert(name);
  }
  std::map<std::string, at::Tensor> tensors;
  for (const auto& [file_name, names] : names_by_file) {
    const fs::path shard = folder / file_name;
    if (!fs::exists(shard))
      throw ArgumentError(where + " names shard " + file_name + ", which is missing from " +
                          folder.string() +
                          "; copy every model-*.safetensors file of the "
                          "checkpoint");
    SafetensorsFile loaded = load_safetensors(shard.string());
    for (const std::string& name : names)
      if (!loaded.tensors.count(name))
        throw ArgumentError(where + " puts tensor " + name + " in " + file_name +
                            ", which does not hold it; the index and the shards are from "
                            "different saves");
    for (auto& [name, tensor] : loaded.tensors) {
      if (!names.count(name))
        throw ArgumentError(shard.string() + " holds tensor " + name + ", which " + where +
                            " does not list in that file; the index and the shards are from "
                            "different saves");
      tensors.emplace(name, std::move(tensor));
    }
  }
  return tensors;
}

}  // namespace ctrainer
