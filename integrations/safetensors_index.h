#pragma once
/// \file Sharded safetensors checkpoints as transformers writes and reads them: the weights split
/// over model-00001-of-0000N.safetensors files and a model.safetensors.index.json whose
/// "weight_map" says which file holds each tensor ({"metadata": {"total_parameters": P,
/// "total_size": S}, "weight_map": {name: file}}, keys sorted, indent 2). The split is
/// huggingface_hub's split_torch_state_dict_into_shards: tensors in state-dict order, a new shard
/// when the next tensor would pass max_shard_size, a tensor larger than that alone in its shard.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

namespace ctrainer {

/// transformers' default max_shard_size for save_pretrained (transformers 5: "50GB").
inline constexpr std::int64_t kDefaultMaxShardBytes = 50'000'000'000;

/// The index file next to sharded weights.
inline constexpr const char* kSafetensorsIndexFile = "model.safetensors.index.json";

/// huggingface_hub's parse_size_to_int: "<number><unit>" with unit KB, MB, GB or TB (any case,
/// powers of 1000; the number may have a fraction, "1.5GB"), or a plain count of bytes ("5000").
/// Throws ArgumentError naming `what` (the flag or field) for anything else or a size below 1.
std::int64_t parse_shard_size(const std::string& text, const std::string& what);

/// One output file of a split and the tensor names it holds, in state-dict order.
struct SafetensorsShard {
  std::string file_name;
  std::vector<std::string> names;
};

/// How a state dict is split (split_torch_state_dict_into_shards). One shard is named
/// model.safetensors; N > 1 are model-0000i-of-0000N.safetensors.
struct SafetensorsSplit {
  std::vector<SafetensorsShard> shards;
  std::int64_t total_size = 0;  ///< bytes of tensor data (numel * element size, summed)
  bool sharded() const { return shards.size() > 1; }
};

/// The split of `tensors` (name and tensor, in state-dict order) at `max_shard_bytes`.
SafetensorsSplit split_into_shards(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                   std::int64_t max_shard_bytes);

/// Writes `tensors` into `dir` as transformers' save_pretrained does: model.safetensors when they
/// fit in one shard, otherwise the shard files and model.safetensors.index.json (metadata
/// total_parameters = `total_parameters`, total_size). `metadata` goes into every file's
/// __metadata__. Weight files of an earlier save into `dir` that this one does not replace (a
/// model.safetensors, an index, shards of another count) are removed after the new files are
/// written, so a loader cannot pick up stale weights. Returns the split that was written.
SafetensorsSplit save_safetensors_shards(
    const std::filesystem::path& dir,
    const std::vector<std::pair<std::string, at::Tensor>>& tensors, std::int64_t max_shard_bytes,
    std::int64_t total_parameters,
    const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

/// Reads a model.safetensors.index.json and every shard it names (files in the index's folder)
/// into one map. Throws ArgumentError naming the index for: unreadable or invalid JSON, no
/// "weight_map" object, a file value that is not a plain file name inside the folder ("../x",
/// "/abs", "a/b"), a shard that is missing, a name the index puts in a shard that does not hold
/// it, a tensor of a shard that the index does not list there. A malformed shard throws
/// SafetensorsError naming the shard.
std::map<std::string, at::Tensor> load_safetensors_shards(const std::filesystem::path& index_file);

}  // namespace ctrainer
