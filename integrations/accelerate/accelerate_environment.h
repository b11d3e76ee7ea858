#pragma once
/// \file What `accelerate launch` tells a program through its environment, read as HF's
/// TrainingArguments and Accelerator read it when the program is a Python script: the mixed
/// precision of its config file (ACCELERATE_MIXED_PRECISION), CPU only (ACCELERATE_USE_CPU), FSDP
/// (ACCELERATE_USE_FSDP with the FSDP_* variables, as accelerate's FullyShardedDataParallelPlugin
/// reads them), DeepSpeed (ACCELERATE_USE_DEEPSPEED with the ACCELERATE_DEEPSPEED_* variables,
/// accelerate_deepspeed_plugin.h), and what ctrainer's programs cannot take from the environment,
/// refused by name instead of being ignored (ACCELERATE_USE_MEGATRON_LM, a torch.compile
/// backend, debug mode). ACCELERATE_GRADIENT_ACCUMULATION_STEPS outside DeepSpeed is ignored, as
/// HF's Trainer ignores it (it hands Accelerate its own --gradient_accumulation_steps); under
/// DeepSpeed it is the plugin's, which must then agree with --gradient_accumulation_steps.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>

namespace ctrainer {

/// accelerate launch's variables that change what the program trains.
struct AccelerateLaunchEnvironment {
  /// "fp16" or "bf16" from ACCELERATE_MIXED_PRECISION; unset for "no" or no variable.
  std::optional<std::string> mixed_precision;
  bool use_cpu = false;        ///< ACCELERATE_USE_CPU true (strtobool's spellings)
  bool use_deepspeed = false;  ///< ACCELERATE_USE_DEEPSPEED=true (accelerate's DEEPSPEED files)
  /// With use_deepspeed: the DeepSpeed config of accelerate's plugin, before its mixed precision
  /// (accelerate_deepspeed_plugin_config).
  std::optional<nlohmann::json> deepspeed_config;
  /// ACCELERATE_USE_FSDP=true: the FSDP_* variables as the fsdp_config object transformers
  /// would hand accelerate for the same plugin (keys without the fsdp_ prefix: version,
  /// reshard_after_forward, cpu_offload, auto_wrap_policy, transformer_layer_cls_to_wrap,
  /// min_num_params, backward_prefetch, forward_prefetch, use_orig_params, sync_module_states,
  /// cpu_ram_efficient_loading, activation_checkpointing, state_dict_type); parse_fsdp reads it.
  std::optional<nlohmann::json> fsdp_config;
};

/// Reads accelerate launch's variables from `environment`. Throws ArgumentError naming the
/// variable for a value accelerate would not accept either, and for ("not supported yet", naming
/// the variable and what to pass instead) fp8, FSDP's activation checkpointing offload and ignored
/// modules, Megatron-LM, a dynamo backend other than
/// NO, and debug mode.
AccelerateLaunchEnvironment read_accelerate_environment(const EnvironmentMap& environment);

}  // namespace ctrainer
