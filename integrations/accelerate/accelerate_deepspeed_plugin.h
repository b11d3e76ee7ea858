#pragma once
/// \file accelerate's DeepSpeed plugin as `accelerate launch` hands it to a program through the
/// environment (distributed_type DEEPSPEED), built as accelerate's DeepSpeedPlugin.__post_init__
/// builds it when HF's TrainingArguments sees ACCELERATE_USE_DEEPSPEED=true and no --deepspeed:
///   - with ACCELERATE_DEEPSPEED_CONFIG_FILE: that JSON file, gradient_accumulation_steps 1 added
///     when it has none, and its "auto" values at the plugin's keys filled from the variables
///     (must_match=False: a value that is not "auto" stays); ACCELERATE_CONFIG_DS_FIELDS naming
///     one of those settings is refused, as accelerate refuses it;
///   - without: {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
///     "gradient_accumulation_steps", "zero_optimization": {"stage", "offload_optimizer",
///     "offload_param", "stage3_gather_16bit_weights_on_model_save"}, "gradient_clipping"} from
///     ACCELERATE_GRADIENT_ACCUMULATION_STEPS ("auto" when unset), ACCELERATE_GRADIENT_CLIPPING
///     ("auto"), ACCELERATE_DEEPSPEED_ZERO_STAGE (2), ACCELERATE_DEEPSPEED_OFFLOAD_*_DEVICE
///     ("none"), ACCELERATE_DEEPSPEED_OFFLOAD_*_NVME_PATH and
///     ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL.
/// The program then trains with that config as if it were --deepspeed: its remaining "auto"
/// values are filled from the arguments, and values that disagree with them are reported, as
/// transformers' propagate_args_to_deepspeed does. accelerate's "steps_per_print" (infinity, to
/// silence DeepSpeed) is left out: ctrainer logs every --logging_steps.
/// ACCELERATE_DEEPSPEED_ZERO3_INIT is not read: ZeRO-3's sharded initialisation saves memory
/// while a model is built and changes no value. No torch here.
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>

namespace ctrainer {

/// The plugin's DeepSpeed config. Throws ArgumentError naming the variable or file for values
/// accelerate would not accept either (a stage or clipping that is not a number, a config file
/// that is missing, not a JSON object or without "zero_optimization") and for MoE leaf modules
/// (ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES), which ctrainer does not implement.
nlohmann::json accelerate_deepspeed_plugin_config(const EnvironmentMap& environment);

/// DeepSpeedPlugin.set_mixed_precision(`mixed_precision`): "fp16" adds {"fp16": {"enabled":
/// true, "auto_cast": true}} and "bf16" {"bf16": {"enabled": true}} when the config has no such
/// section; a section of the other type that is enabled is refused; missing sections become
/// {"enabled": false}, and "auto" enabled values are filled. `mixed_precision` is "no", "fp16"
/// or "bf16".
void apply_deepspeed_mixed_precision(nlohmann::json& config, const std::string& mixed_precision);

}  // namespace ctrainer
