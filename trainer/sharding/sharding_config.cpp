#include <ctrainer/trainer/sharding/sharding_config.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_config.h>
#include <ctrainer/core/logging.h>
#include <ctrainer/trainer/args/sharding_files.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>

namespace ctrainer {
namespace {

void log_change(const std::string& source, const std::string& flag, const std::string& value,
                const std::string& why) {
  logging::logger()->info("{}: --{} {} ({})", source, flag, value, why);
}

std::string number_text(double value) {
  return nlohmann::json(value).dump();
}

/// What the processed config implies for the arguments (transformers hands these to the
/// DeepSpeed engine instead of using the arguments).
DeepSpeedTrainingSettings training_settings(const DeepSpeedConfig& ds,
                                            const TrainingArguments& args) {
  DeepSpeedTrainingSettings out;
  switch (ds.dtype()) {
    case DeepSpeedDtype::kBf16:
      out.bf16 = true;
      break;
    case DeepSpeedDtype::kFp16:
      out.fp16 = true;
      break;
    case DeepSpeedDtype::kFp32:
      // No section enables a dtype: Accelerate adds one for --fp16 / --bf16.
      out.fp16 = args.fp16;
      out.bf16 = args.bf16;
      break;
  }
  if (out.fp16) {
    const DeepSpeedLossScale scale = ds.loss_scale();
    GradScalerOptions scaler = GradScalerOptions::deepspeed();
    scaler.loss_scale = scale.loss_scale;
    scaler.initial_scale_power = scale.initial_scale_power;
    scaler.loss_scale_window = scale.loss_scale_window;
    scaler.hysteresis = scale.hysteresis;
    scaler.consecutive_hysteresis = scale.consecutive_hysteresis;
    scaler.min_loss_scale = scale.min_loss_scale;
    scaler.validate();
    out.loss_scaling = scaler;
  }
  out.max_grad_norm = ds.gradient_clipping().value_or(0.0);
  out.optimizer = ds.optimizer();
  out.scheduler = ds.scheduler();
  return out;
}

ShardingOptions options_from_zero(const DeepSpeedZeroSettings& zero, const std::string& source) {
  ShardingOptions o;
  o.stage = static_cast<ShardingStage>(zero.stage);
  o.offload_optimizer = zero.offload_optimizer;
  // DeepSpeed reads offload_param at stage 3 only.
  o.offload_params = zero.offload_param && zero.stage == 3;
  if (zero.offload_param && zero.stage != 3)
    logging::logger()->info(
        "{}: zero_optimization.offload_param is read at stage 3 only; "
        "ignored at stage {}",
        source, zero.stage);
  o.reduce_bucket_elements = zero.reduce_bucket_size;
  o.overlap_comm = zero.overlap_comm;
  o.param_persistence_threshold = zero.stage == 3 ? zero.param_persistence_threshold : 0;
  // DeepSpeed gathers stage-3 parameters module by module as forward reaches them; here the
  // gathering unit is the model's repeated layer (its no_split_modules).
  o.wrap_model_layers = zero.stage == 3;
  o.gather_16bit_weights_on_model_save = zero.gather_16bit_weights_on_model_save;
  // DeepSpeed checkpoints are per-rank shards (global_step*/...); consolidated weights come
  // from save_model.
  o.state_dict_type = ShardedStateDictType::kSharded;
  return o;
}

std::optional<int64_t> model_hidden_size(const Model& model) {
  const std::optional<nlohmann::json> config = model.config();
  return config ? hidden_size_from_model_config(*config) : std::nullopt;
}

}  // namespace

DeepSpeedTrainerArgs deepspeed_trainer_args(const TrainingArguments& args, int64_t world_size) {
  DeepSpeedTrainerArgs out;
  out.world_size = world_size;
  out.per_device_train_batch_size = args.per_device_train_batch_size;
  out.gradient_accumulation_steps = args.gradient_accumulation_steps;
  out.max_grad_norm = args.max_grad_norm;
  out.learning_rate = args.learning_rate;
  out.adam_beta1 = args.adam_beta1;
  out.adam_beta2 = args.adam_beta2;
  out.adam_epsilon = args.adam_epsilon;
  out.weight_decay = args.weight_decay;
  out.fp16 = args.fp16;
  out.fp16_full_eval = args.fp16_full_eval;
  out.bf16 = args.bf16;
  out.bf16_full_eval = args.bf16_full_eval;
  return out;
}

ShardingSetup resolve_sharding(TrainingArguments& args, const ProcessInfo& process,
                               const Model& model) {
  ShardingSetup setup;
  const std::shared_ptr<const ShardingFiles> files = read_sharding_files(args);
  if (files->fsdp_setup) {
    setup.source = "--fsdp";
    // transformers' rule: a launcher's process is distributed training even when it is alone
    // (LOCAL_RANK set: ParallelMode.DISTRIBUTED), as an elastic job that shrank to one process
    // is; only a process started without one is refused.
    if (!process.is_distributed() && process.launched_by == LaunchEnvironment::kSingleProcess)
      throw ArgumentError("--fsdp " + args.fsdp +
                          ": Using fsdp only works in distributed training; start the program "
                          "with a launcher (ctrainer-run, torchrun, srun) or remove --fsdp");
    const std::string source =
        args.fsdp_config ? "--fsdp_config " + *args.fsdp_config : "--fsdp_config";
    setup.fsdp = files->fsdp_setup;
    setup.options = setup.fsdp->options;
    if (setup.fsdp->activation_checkpointing && !args.gradient_checkpointing) {
      args.gradient_checkpointing = true;
      log_change(source, "gradient_checkpointing", "true", "fsdp_config activation_checkpointing");
    } else if (setup.fsdp->activation_checkpointing) {
      // transformers warns that its own flag adds an all-gather; ctrainer's is the same thing.
      logging::logger()->info(
          "{}: activation_checkpointing and --activation_checkpointing ask for "
          "the same recomputation",
          source);
    }
  } else if (files->deepspeed_config) {
    setup.source = "--deepspeed " + *args.deepspeed;
    DeepSpeedConfig ds = *files->deepspeed_config;
    ds.trainer_config_process(deepspeed_trainer_args(args, process.world_size));
    ds.fill_hidden_size_keys(model_hidden_size(model));
    setup.options = options_from_zero(ds.zero(), setup.source);
    DeepSpeedTrainingSettings settings = training_settings(ds, args);
    if (settings.fp16 != args.fp16) {
      args.fp16 = settings.fp16;
      log_change(setup.source, "fp16", settings.fp16 ? "true" : "false", "the config's fp16");
    }
    if (settings.bf16 != args.bf16) {
      args.bf16 = settings.bf16;
      log_change(setup.source, "bf16", settings.bf16 ? "true" : "false", "the config's bf16");
    }
    if (setup.options.stage != ShardingStage::kNone && (settings.bf16 || settings.fp16)) {
      // DeepSpeed's engine runs the module in 16 bits and keeps fp32 masters in its ZeRO
      // optimizer; stage 0 trains with DDP here, which keeps no master (autocast instead).
      setup.options.parameter_dtype = settings.bf16 ? at::kBFloat16 : at::kHalf;
      logging::logger()->info(
          "{}: the model runs in {} and the optimizer steps fp32 master weights in its shards "
          "(DeepSpeed's {} mode; no autocast)",
          setup.source, settings.bf16 ? "bfloat16" : "float16", settings.bf16 ? "bf16" : "fp16");
    }
    if (settings.max_grad_norm != args.max_grad_norm) {
      log_change(setup.source, "max_grad_norm", number_text(settings.max_grad_norm),
                 ds.gradient_clipping() ? "the config's gradient_clipping"
                                        : "no gradient_clipping in the config: DeepSpeed clips "
                                          "nothing");
      args.max_grad_norm = settings.max_grad_norm;
    }
    if (!settings.optimizer && ds.zero().offload_optimizer)
      logging::logger()->info(
          "Detected ZeRO Offload and non-DeepSpeed optimizers: This combination should work as "
          "long as the custom optimizer has both CPU and GPU implementation (except LAMB)");
    setup.deepspeed_settings = std::move(settings);
    setup.deepspeed = std::move(ds);
  }
  if (setup.enabled())
    logging::logger()->info("{}: {}", setup.source, describe(setup.options.stage));
  return setup;
}

void finalize_sharding(ShardingSetup& setup, const TrainingArguments& args, const Model& model,
                       int64_t num_training_steps) {
  if (!setup.deepspeed) return;
  setup.deepspeed->trainer_config_finalize(model_hidden_size(model), num_training_steps,
                                           get_warmup_steps(args, num_training_steps));
  setup.deepspeed_settings->optimizer = setup.deepspeed->optimizer();
  setup.deepspeed_settings->scheduler = setup.deepspeed->scheduler();
  nlohmann::json filled = setup.deepspeed->config();
  // transformers sets this when the Trainer, not the config, creates the optimizer.
  if (!filled.contains("optimizer")) filled["zero_allow_untested_optimizer"] = true;
  logging::logger()->info("{}: DeepSpeed config after filling \"auto\":\n{}", setup.source,
                          filled.dump(2));
}

}  // namespace ctrainer
