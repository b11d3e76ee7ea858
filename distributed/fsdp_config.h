#pragma once
/// \file --fsdp and --fsdp_config as transformers 5.24's TrainingArguments reads them
/// (_process_fsdp_args, _apply_legacy_fsdp_to_config), turned into ShardingOptions.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/distributed/sharding_options.h>

namespace ctrainer {

/// What --fsdp / --fsdp_config ask for.
struct FsdpSetup {
  ShardingOptions options;
  /// fsdp_config activation_checkpointing: recompute each layer in backward (ctrainer's
  /// --gradient_checkpointing).
  bool activation_checkpointing = false;
  /// fsdp_config version (transformers' default 2).
  int version = 2;
  /// The fsdp_config as transformers normalises it: "fsdp_" prefixes removed,
  /// transformer_layer_cls_to_wrap a list, min_num_params present.
  nlohmann::json config = nlohmann::json::object();
};

/// Whether --fsdp turns FSDP on: "" and false/False/0 do not; true/True/1 (transformers 5's
/// boolean form) and the legacy option words (full_shard, ..., offload, auto_wrap) do.
bool fsdp_enabled(const std::string& fsdp);

/// Reads --fsdp_config as a JSON object: inline JSON ('{...}', as transformers 5's __post_init__
/// parses it) or a file's path; a syntax error names FILE (or "inline JSON"):LINE:COLUMN. Throws
/// ArgumentError naming --fsdp_config.
nlohmann::json read_fsdp_config(const std::string& value);

/// Maps --fsdp `fsdp` and the fsdp_config object `config` (from `source`, for messages) to a
/// FsdpSetup. Legacy words: full_shard → ZeRO-3, shard_grad_op → ZeRO-2, no_shard → none,
/// hybrid_shard / hybrid_shard_zero2 → ZeRO-3 / ZeRO-2 sharded per node (FSDP1 only, as in
/// transformers), offload → optimizer state and parameters on the CPU, auto_wrap → nothing.
/// Throws ArgumentError naming the flag or key and the fix for unknown words or keys,
/// contradictions (two sharding strategies, min_num_params with transformer_layer_cls_to_wrap,
/// a key the chosen auto_wrap_policy does not read, ...) and features ctrainer lacks (xla,
/// LOCAL_STATE_DICT). Keys that change no result (use_orig_params, sync_module_states,
/// cpu_ram_efficient_loading) are accepted with an info line.
FsdpSetup parse_fsdp(const std::string& fsdp, const nlohmann::json& config,
                     const std::string& source = "--fsdp_config");

}  // namespace ctrainer
