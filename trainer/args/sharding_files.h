#pragma once
/// \file The files that --fsdp_config and --deepspeed name, read and checked once, when the
/// arguments are validated, so that a bad file fails before any data is loaded and the Trainer
/// resolves what was read instead of opening the files again (trainer/sharding/sharding_config.h).
#include <memory>
#include <optional>
#include <string>

#include <ctrainer/distributed/fsdp_config.h>
#include <ctrainer/integrations/deepspeed_config.h>

namespace ctrainer {

struct TrainingArguments;

/// What --fsdp / --fsdp_config / --deepspeed asked for, as read from their files.
struct ShardingFiles {
  /// The flags the files were read for: a later change of any of them reads again.
  std::string fsdp;
  std::optional<std::string> fsdp_config;
  std::optional<std::string> deepspeed;
  /// --fsdp (with --fsdp_config when given), parsed; unset when --fsdp is off.
  std::optional<FsdpSetup> fsdp_setup;
  /// The --deepspeed file as written (keys and values checked, nothing filled yet).
  std::optional<DeepSpeedConfig> deepspeed_config;

  /// Whether these were read for the flags `args` holds now.
  bool read_for(const TrainingArguments& args) const;
};

/// The flag checks of the sharding front ends (--fsdp with --deepspeed, --fsdp_config without
/// --fsdp: ArgumentError with transformers' message), then the files read and checked (JSON
/// syntax with FILE:LINE:COLUMN, keys, values). Returns `args.sharding_files` without reading
/// anything when it was read for the same flags.
std::shared_ptr<const ShardingFiles> read_sharding_files(const TrainingArguments& args);

}  // namespace ctrainer
