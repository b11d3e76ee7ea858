#pragma once
/// \file The glue between the sharding front ends (--fsdp / --fsdp_config, --deepspeed) and the
/// Trainer, in one place: what validate() read (args/sharding_files.h) resolved against the
/// launch environment and the model when the Trainer is built, and transformers'
/// trainer_config_finalize when training starts.
#include <cstdint>
#include <optional>
#include <string>

#include <ctrainer/distributed/fsdp_config.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/distributed/sharding_options.h>
#include <ctrainer/integrations/deepspeed_config.h>
#include <ctrainer/models/model.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/precision/grad_scaler.h>

namespace ctrainer {

/// The TrainingArguments-level settings a DeepSpeed config implies (transformers hands them to
/// the DeepSpeed engine, which then owns precision, clipping, optimizer and scheduler).
struct DeepSpeedTrainingSettings {
  /// Mixed precision of the run: the config's dtype (bf16.enabled, else fp16.enabled), else
  /// the arguments' --fp16 / --bf16 (Accelerate adds the section for them).
  bool fp16 = false;
  bool bf16 = false;
  /// With fp16: DeepSpeed's loss scaler with the fp16 section's knobs.
  std::optional<GradScalerOptions> loss_scaling;
  /// The config's gradient_clipping; DeepSpeed clips nothing without it (0).
  double max_grad_norm = 0.0;
  /// The config's optimizer / scheduler sections, when present: the Trainer creates them with
  /// create_deepspeed_optimizer / create_deepspeed_scheduler (trainer/optim/deepspeed_optim.h).
  std::optional<DeepSpeedSection> optimizer;
  std::optional<DeepSpeedSection> scheduler;
};

/// A run's sharding, resolved.
struct ShardingSetup {
  /// What the sharded strategy reads (stage kNone and defaults when nothing was asked for).
  ShardingOptions options;
  /// "--fsdp", "--deepspeed <path>", or empty when neither flag was given.
  std::string source;
  std::optional<FsdpSetup> fsdp;
  /// The processed DeepSpeed config (trainer_config_process and the hidden-size keys done).
  std::optional<DeepSpeedConfig> deepspeed;
  /// Filled when `deepspeed` is.
  std::optional<DeepSpeedTrainingSettings> deepspeed_settings;

  bool enabled() const { return !source.empty(); }
};

/// The DeepSpeedTrainerArgs transformers reads from `args`, with the world size of `process`.
DeepSpeedTrainerArgs deepspeed_trainer_args(const TrainingArguments& args, int64_t world_size);

/// When the Trainer is built (after validate(), before precision and strategy): takes the files
/// validate() read (reading them only if the flags changed since), fills ShardingOptions, runs
/// transformers' trainer_config_process and the model's hidden-size "auto" keys for DeepSpeed, and
/// applies what the config implies to `args` (fp16/bf16, max_grad_norm = gradient_clipping; fsdp
/// activation_checkpointing → gradient_checkpointing), logging each change. --fsdp needs a
/// launcher's process (any world size), as in transformers ("Using fsdp only works in
/// distributed training.").
ShardingSetup resolve_sharding(TrainingArguments& args, const ProcessInfo& process,
                               const Model& model);

/// When training starts and the number of optimizer steps is known: transformers'
/// trainer_config_finalize (scheduler total_num_steps / warmup_num_steps) and one ArgumentError
/// listing every mismatch between the config and the arguments; then logs the filled config at
/// info level. Does nothing without --deepspeed.
void finalize_sharding(ShardingSetup& setup, const TrainingArguments& args, const Model& model,
                       int64_t num_training_steps);

}  // namespace ctrainer
