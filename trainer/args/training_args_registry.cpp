// The TrainingArguments flag table: one OptionSpec per field (name, aliases, help, kind, enum
// choices, default), from which --help, JSON loading, parsing and to_json are all derived. An enum
// field's choices come from its ChoiceTable (args/choices.h) through its Codec.
#include <string>
#include <vector>

#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/option_codec.h>

namespace ctrainer {
namespace {

using namespace args_detail;

// ---- the TrainingArguments registry ------------------------------------------------------------

class TableBuilder {
 public:
  void group(std::string name) { group_ = std::move(name); }

  template <typename Field>
  OptionSpec& add(Field TrainingArguments::*member, std::string name, std::string help) {
    specs_.push_back(
        make_spec<Field>(std::move(name), std::move(help), MemberAccess<Field>{member}));
    specs_.back().group = group_;
    return specs_.back();
  }

  std::vector<OptionSpec> finish() {
    const TrainingArguments defaults;
    for (OptionSpec& spec : specs_) spec.default_text = display(spec.get_json(defaults));
    return std::move(specs_);
  }

 private:
  std::string group_;
  std::vector<OptionSpec> specs_;
};

std::vector<OptionSpec> build_training_args_options() {
  using TA = TrainingArguments;
  TableBuilder t;

  t.group("output");
  t.add(&TA::output_dir, "output_dir",
        "Directory for logs, training_args.json and (later) checkpoints.");
  t.add(&TA::overwrite_output_dir, "overwrite_output_dir",
        "Allow writing into an output_dir that already holds files.")
      .origin = "transformers 4";
  t.add(&TA::do_train, "do_train", "Run training (read by scripts, not by the Trainer).");
  t.add(&TA::do_eval, "do_eval",
        "Run evaluation on the validation set (set automatically when eval_strategy is not no).");
  t.add(&TA::do_predict, "do_predict", "Run predictions on the test set (read by scripts).");
  t.add(&TA::run_name, "run_name", "Name of the run in logs. Defaults to output_dir.");

  t.group("evaluation, logging and saving strategies");
  t.add(&TA::eval_strategy, "eval_strategy",
        "When to evaluate: no, steps (every eval_steps) or epoch (end of each epoch).")
      .aliases = {"evaluation_strategy"};
  t.add(&TA::eval_steps, "eval_steps",
        "Evaluate every N optimizer steps with eval_strategy=steps; a value below 1 is a ratio of "
        "the total training steps. Defaults to logging_steps.");
  t.add(&TA::logging_strategy, "logging_strategy",
        "When to log: no, steps (every logging_steps) or epoch.");
  t.add(&TA::logging_steps, "logging_steps",
        "Log every N optimizer steps with logging_strategy=steps; a value below 1 is a ratio of "
        "the total training steps.");
  t.add(&TA::logging_first_step, "logging_first_step", "Also log after the first optimizer step.");
  t.add(&TA::include_num_input_tokens_seen, "include_num_input_tokens_seen",
        "Count the input tokens seen into trainer_state.json's num_input_tokens_seen and every "
        "log entry: all (the input_ids' elements; true), non_padding (the attention_mask's ones) "
        "or no (false). The training logs then also carry train_runtime and "
        "train_tokens_per_second, as transformers writes them.");
  t.add(&TA::profile_steps, "profile_steps",
        "ctrainer: time the phases of optimizer steps 2..N+1 (data wait, forward, backward, "
        "clip, optimizer, communication, checkpoint, evaluation), log them and write "
        "output_dir/profile.json with the time from process start to the first step; 0: off. "
        "On CUDA each phase ends with a device synchronisation while profiling.")
      .origin = "ctrainer";
  t.add(&TA::save_strategy, "save_strategy",
        "When to save checkpoints (output_dir/checkpoint-<step>): no, steps, epoch, or best "
        "(whenever metric_for_best_model improves).");
  t.add(&TA::save_steps, "save_steps",
        "Save every N optimizer steps with save_strategy=steps; a value below 1 is a ratio of the "
        "total training steps.");
  t.add(&TA::save_total_limit, "save_total_limit",
        "Keep at most this many checkpoints, deleting the oldest but never the best one (unset: "
        "keep all).");
  t.add(&TA::save_only_model, "save_only_model",
        "Save only the model in checkpoints, not the optimizer, scheduler and RNG states (such a "
        "checkpoint cannot be resumed from).");

  t.group("batch sizes");
  t.add(&TA::per_device_train_batch_size, "per_device_train_batch_size",
        "Training batch size per device (process).");
  t.add(&TA::per_device_eval_batch_size, "per_device_eval_batch_size",
        "Evaluation batch size per device (process).");
  t.add(&TA::gradient_accumulation_steps, "gradient_accumulation_steps",
        "Number of batches whose gradients are accumulated before each optimizer step.");
  t.add(&TA::eval_accumulation_steps, "eval_accumulation_steps",
        "Move accumulated predictions to the host every N evaluation steps (unset: at the end).");

  t.group("optimizer");
  t.add(&TA::learning_rate, "learning_rate", "Peak learning rate of the optimizer.");
  t.add(&TA::weight_decay, "weight_decay",
        "Decoupled weight decay, applied to all parameters except biases and LayerNorm weights.");
  t.add(&TA::adam_beta1, "adam_beta1", "beta1 of Adam/AdamW.");
  t.add(&TA::adam_beta2, "adam_beta2", "beta2 of Adam/AdamW.");
  t.add(&TA::adam_epsilon, "adam_epsilon", "epsilon of Adam/AdamW.");
  t.add(&TA::max_grad_norm, "max_grad_norm",
        "Clip the global L2 norm of the gradients to this value (0 disables clipping).");
  t.add(&TA::optim, "optim",
        "Optimizer: adamw_torch_fused (default, as HF on torch >= 2.8: one fused kernel), "
        "adamw_torch (= adamw_hf: the reference AdamW) or sgd.");

  t.group("schedule");
  t.add(&TA::num_train_epochs, "num_train_epochs",
        "Number of training epochs; a fractional value trains part of the last epoch.");
  t.add(&TA::max_steps, "max_steps",
        "If > 0, the total number of optimizer steps; overrides num_train_epochs. -1: unset.");
  t.add(&TA::lr_scheduler_type, "lr_scheduler_type", "Learning-rate schedule.");
  t.add(&TA::lr_scheduler_kwargs, "lr_scheduler_kwargs",
        "The schedule's own arguments as a JSON object (HF's scheduler_specific_kwargs): "
        "cosine: num_cycles; cosine_with_restarts: num_cycles; polynomial: lr_end, power; "
        "inverse_sqrt: timescale; cosine_with_min_lr: num_cycles and min_lr or min_lr_rate; "
        "cosine_warmup_with_min_lr: the same and warmup_lr_rate; warmup_stable_decay: "
        "num_decay_steps (required), num_stable_steps, warmup_type, decay_type "
        "(linear, cosine, 1-sqrt), min_lr_ratio, num_cycles.");
  t.add(&TA::warmup_steps, "warmup_steps",
        "Linear warm-up over this many optimizer steps (overrides warmup_ratio when > 0); a "
        "value below 1 is a ratio of the total optimizer steps, as in transformers 5.");
  t.add(&TA::warmup_ratio, "warmup_ratio",
        "Fraction of the total optimizer steps used for linear warm-up, in [0, 1].")
      .origin = "transformers 4";

  t.group("reproducibility");
  t.add(&TA::seed, "seed", "Random seed set at the beginning of training.");
  t.add(&TA::data_seed, "data_seed", "Seed of the data samplers. Defaults to seed.");
  t.add(&TA::full_determinism, "full_determinism",
        "Use deterministic algorithms everywhere (slower; for debugging).");

  t.group("logging");
  t.add(&TA::log_level, "log_level",
        "Log level of the main process; passive keeps the application's level.");
  t.add(&TA::log_level_replica, "log_level_replica", "Log level of the other processes.");
  t.add(&TA::log_on_each_node, "log_on_each_node",
        "In multi-node training, log from the main process of each node, not only of node 0.");
  t.add(&TA::disable_tqdm, "disable_tqdm", "Disable the progress bars.");
  t.add(&TA::report_to, "report_to",
        "Integrations to report results and logs to: tensorboard, mlflow (a tracking server at "
        "$MLFLOW_TRACKING_URI), all (every integration built in that is set up) or none.")
      .not_yet = report_to_integrations_not_built();
  t.add(&TA::logging_dir, "logging_dir",
        "TensorBoard log folder. Defaults to $TENSORBOARD_LOGGING_DIR, else "
        "output_dir/runs/CURRENT_DATETIME_HOSTNAME.")
      .origin = "transformers 4";

  t.group("data loading");
  t.add(&TA::dataloader_num_workers, "dataloader_num_workers",
        "Number of worker threads that build batches ahead of the training step (0: build them "
        "in the main thread). The batches are the same for any number of workers.");
  t.add(&TA::dataloader_prefetch_factor, "dataloader_prefetch_factor",
        "Batches each worker builds ahead (requires dataloader_num_workers > 0; default 2).");
  t.add(&TA::dataloader_drop_last, "dataloader_drop_last",
        "Drop the last incomplete batch of each epoch.");
  t.add(&TA::dataloader_pin_memory, "dataloader_pin_memory",
        "Pin host memory of batches (set to false by use_cpu).");
  t.add(&TA::label_names, "label_names", "Batch keys that hold the labels. Defaults to labels.");
  t.add(&TA::train_sampling_strategy, "train_sampling_strategy",
        "Order of the training examples: random (reshuffled every epoch), sequential (the "
        "dataset's order every epoch) or group_by_length (batches of similar length).");
  t.add(&TA::group_by_length, "group_by_length",
        "Group training examples of similar length into batches to reduce padding (the older "
        "name of --train_sampling_strategy group_by_length).")
      .origin = "transformers 4";

  t.group("best model and resuming");
  t.add(&TA::load_best_model_at_end, "load_best_model_at_end",
        "Load the best checkpoint (by metric_for_best_model) at the end of training. Requires "
        "save_strategy to match eval_strategy.");
  t.add(&TA::metric_for_best_model, "metric_for_best_model",
        "Metric that compares checkpoints. Defaults to loss with load_best_model_at_end.");
  t.add(&TA::greater_is_better, "greater_is_better",
        "Whether a higher metric_for_best_model is better. Defaults to false when the metric "
        "ends with loss, true otherwise.");
  t.add(&TA::resume_from_checkpoint, "resume_from_checkpoint",
        "Checkpoint folder to resume training from, or true/latest for the newest complete "
        "checkpoint in output_dir (true: an error when there is none; latest: start from "
        "scratch then).");
  t.add(&TA::ignore_data_skip, "ignore_data_skip",
        "When resuming, do not skip the batches already seen in the interrupted epoch.");
  t.add(&TA::save_on_signal, "save_on_signal",
        "On SIGTERM or SIGINT, finish the current optimizer step, save a checkpoint and exit with "
        "code 143 (SIGTERM) or 130 (SIGINT); a second SIGINT aborts at once.")
      .origin = "ctrainer";

  t.group("device and precision");
  t.add(&TA::use_cpu, "use_cpu",
        "Train on the CPU even when an accelerator is available. Unset: a GPU when one is "
        "visible, else the CPU; false, given explicitly: a GPU is required.")
      .aliases = {"no_cuda"};
  t.add(&TA::fp16, "fp16", "float16 mixed-precision training.");
  t.add(&TA::bf16, "bf16", "bfloat16 mixed-precision training.");
  t.add(&TA::half_precision_backend, "half_precision_backend",
        "Backend of mixed precision: auto (native autocast), apex (not supported) or cpu_amp "
        "(CPU autocast, CPU runs only).")
      .origin = "transformers 4";
  t.add(&TA::fp16_opt_level, "fp16_opt_level",
        "Apex AMP optimization level (O0-O3); only read by apex, kept for HF compatibility.")
      .origin = "transformers 4";
  t.add(&TA::fp16_full_eval, "fp16_full_eval",
        "Evaluate and predict (outside training) with the model cast to float16 (CUDA only).");
  t.add(&TA::bf16_full_eval, "bf16_full_eval",
        "Evaluate and predict (outside training) with the model cast to bfloat16.");
  t.add(&TA::tf32, "tf32",
        "Allow TF32 matmuls and convolutions on Ampere or newer GPUs (unset: libtorch's "
        "default).");
  t.add(&TA::label_smoothing_factor, "label_smoothing_factor",
        "Label smoothing epsilon in [0, 1) for the cross-entropy loss (0: none).");
  t.add(&TA::neftune_noise_alpha, "neftune_noise_alpha",
        "NEFTune: while training, add uniform noise of magnitude alpha / sqrt(sequence length x "
        "hidden size) to the input embeddings (unset: none; the paper uses 5 to 15).");
  t.add(&TA::activation_checkpointing, "activation_checkpointing",
        "Recompute activations in the backward pass to save memory (transformers 5's name; wins "
        "over --gradient_checkpointing when both are given).");
  t.add(&TA::gradient_checkpointing, "gradient_checkpointing",
        "Deprecated alias of --activation_checkpointing (transformers 5), used when that is not "
        "given.");

  t.group("distributed");
  t.add(&TA::local_rank, "local_rank",
        "Rank of the process on its node, as passed by launchers (-1: not distributed).");
  t.add(&TA::ddp_backend, "ddp_backend",
        "Distributed backend: gloo or nccl (multi-process runs only).");
  t.add(&TA::ddp_timeout, "ddp_timeout",
        "Timeout of the process-group operations, in seconds (multi-process runs only).");
  t.add(&TA::average_tokens_across_devices, "average_tokens_across_devices",
        "For token-level losses (causal language models): normalise by the label tokens of "
        "every rank's accumulation window, not just this rank's (one all-reduce per optimizer "
        "step); false divides by this rank's tokens.");
  t.add(&TA::ddp_find_unused_parameters, "ddp_find_unused_parameters",
        "find_unused_parameters of DistributedDataParallel (multi-process runs only).");
  t.add(&TA::ddp_bucket_cap_mb, "ddp_bucket_cap_mb",
        "Gradient bucket size of DistributedDataParallel, in MiB (multi-process runs only).");
  t.add(&TA::fsdp, "fsdp",
        "Fully sharded data parallel: true (configured by --fsdp_config), or transformers' "
        "older option words, space separated (full_shard, shard_grad_op, hybrid_shard, "
        "hybrid_shard_zero2, no_shard, offload, auto_wrap). See docs/sharding.md.");
  t.add(&TA::fsdp_config, "fsdp_config",
        "An FSDP JSON config: a file's path, or inline JSON ('{...}', as transformers 5 reads "
        "it); transformers' fsdp_config keys, with or without the fsdp_ prefix.");
  t.add(&TA::deepspeed, "deepspeed",
        "A DeepSpeed JSON config: a file's path, or inline JSON ('{...}'); \"auto\" values are "
        "filled from the arguments as transformers does. See docs/sharding.md.");

  return t.finish();
}

}  // namespace

const std::vector<OptionSpec>& training_args_options() {
  static const std::vector<OptionSpec> options = build_training_args_options();
  return options;
}

const OptionSpec* find_training_args_option(const std::string& name) {
  for (const OptionSpec& spec : training_args_options()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

}  // namespace ctrainer
