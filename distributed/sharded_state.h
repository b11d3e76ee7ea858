#pragma once
/// \file The sharded part of a checkpoint written by a ShardedStrategy run: every rank writes the
/// fp32 master values and optimizer state of the slices it owns, named by parameter and element
/// range, so that any world size can read them back (the ranges are re-cut to the new layout).
/// Files, in the checkpoint folder (docs/checkpoint-format.md, "Sharded state"):
///   zero/manifest.json            world size, stage, optimizer type, every parameter's shape
///   zero/rank_<r>.safetensors     "master.<name>", "<state>.<name>" (exp_avg, exp_avg_sq,
///                                 max_exp_avg_sq, momentum_buffer): 1-D slices
///   zero/rank_<r>.json            {"pieces": [{"name", "begin", "end", "step"}]}
#include <filesystem>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>

namespace torch::optim {
class Optimizer;
}

namespace ctrainer {

class ShardedStrategy;

/// The folder (inside a checkpoint) that holds the sharded state.
inline constexpr const char* kShardedStateFolder = "zero";

/// Writes the rank_<r> files of this rank's shards into `dir`/zero (created), `rank` being the
/// strategy's shard_rank(); shard rank 0 also writes the manifest (world_size: the strategy's
/// shard_world_size()). Not collective: the caller orders the ranks' writes (CheckpointManager
/// stages them) and, with HYBRID_SHARD, lets only replica 0 write.
void save_sharded_state(const ShardedStrategy& strategy, const torch::optim::Optimizer& optimizer,
                        const std::filesystem::path& dir, int64_t rank);

/// Loads the master values and optimizer state of this rank's slices from `dir`/zero, written at
/// any world size, then updates the parameters from the masters (collective). Every element of
/// every slice must be covered by the files; the parameters' names and shapes and the optimizer
/// type must match the run. Throws ArgumentError naming the file and the mismatch; nothing in
/// the optimizer or the model is modified before everything was read and checked.
void load_sharded_state(ShardedStrategy& strategy, torch::optim::Optimizer& optimizer,
                        const std::filesystem::path& dir);

/// The full fp32 master weights of a sharded checkpoint, by parameter name, in each parameter's
/// saved shape and dtype (what zero_to_fp32 gives for DeepSpeed): the trainable parameters only.
/// Throws ArgumentError when a rank's files are missing or malformed.
std::map<std::string, at::Tensor> consolidate_sharded_state(const std::filesystem::path& dir);

/// Whether `dir` holds sharded state.
bool has_sharded_state(const std::filesystem::path& dir);

}  // namespace ctrainer
