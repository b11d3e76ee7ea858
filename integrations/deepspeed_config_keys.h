#pragma once
/// \file Which keys of a DeepSpeed config ctrainer reads, which change no result and are ignored,
/// and which it refuses (deepspeed/runtime/config.py, zero/config.py, zero/offload_config.py).
/// Used by DeepSpeedConfig's constructor.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer::deepspeed_keys {

/// The keys whose "auto" transformers' Trainer (or Accelerate, for
/// stage3_gather_16bit_weights_on_model_save) fills, dotted ("optimizer.params.lr").
const std::vector<std::string>& auto_keys();

/// Checks every key and every non-"auto" value of `config`. Throws ArgumentError
/// "--deepspeed <source>: <key> ..." naming the key and the fix for unknown keys, wrong types,
/// values ctrainer does not implement and "auto" outside auto_keys(); logs one info line
/// listing the keys that are accepted but change nothing.
void check(const nlohmann::json& config, const std::string& source);

}  // namespace ctrainer::deepspeed_keys
