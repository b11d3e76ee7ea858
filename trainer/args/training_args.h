#pragma once
/// \file TrainingArguments: every user-settable knob of the Trainer, with Hugging Face's names
/// and defaults. Parsed from the command line and/or JSON by ArgumentParser (argument_parser.h),
/// or filled in code. `validate()` must pass before a Trainer uses it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <ctrainer/trainer/args/choices.h>

namespace ctrainer {

struct ShardingFiles;

/// A JSON object held as its compact text (HF's dict-typed fields, e.g. lr_scheduler_kwargs):
/// '{"num_cycles": 2}' on the command line, an object in a JSON config and in
/// training_args.json. Parsing checks that it is an object.
struct JsonObjectText {
  std::string text = "{}";
  bool operator==(const JsonObjectText&) const = default;
};

/// Hugging Face Trainer arguments. Field names, meanings and defaults follow
/// transformers.TrainingArguments; deviations are documented on the field.
struct TrainingArguments {
  // ---- output ----
  /// Where logs, training_args.json and (later) checkpoints go.
  std::string output_dir = "trainer_output";
  /// Allow writing into a non-empty output_dir.
  bool overwrite_output_dir = false;
  bool do_train = false;
  bool do_eval = false;
  bool do_predict = false;
  /// Name of the run in logs; defaults to output_dir.
  std::optional<std::string> run_name;

  // ---- evaluation / logging / saving strategies (HF spellings in args/choices.h) ----
  /// Alias: evaluation_strategy.
  IntervalStrategy eval_strategy = IntervalStrategy::kNo;
  /// Evaluate every N steps with eval_strategy=steps (a value < 1 is a ratio of max_steps).
  /// Defaults to logging_steps.
  std::optional<double> eval_steps;
  IntervalStrategy logging_strategy = IntervalStrategy::kSteps;
  /// Log every N optimizer steps (a value < 1 is a ratio of max_steps).
  double logging_steps = 500;
  bool logging_first_step = false;
  /// Count the input tokens seen (TrainerState::num_input_tokens_seen, logged with every log
  /// entry): all of input_ids, or those the attention_mask keeps (non_padding).
  InputTokensSeen include_num_input_tokens_seen = InputTokensSeen::kNo;
  /// ctrainer's: time where optimizer steps 2..N+1 spend their time (data wait, forward,
  /// backward, clip, optimizer, communication, checkpoint, evaluation) and write
  /// output_dir/profile.json; 0 (the default) measures nothing.
  int64_t profile_steps = 0;
  /// When to write output_dir/checkpoint-<step>; kBest: whenever metric_for_best_model improves.
  SaveStrategy save_strategy = SaveStrategy::kSteps;
  double save_steps = 500;
  std::optional<int64_t> save_total_limit;
  bool save_only_model = false;

  // ---- batch sizes ----
  int64_t per_device_train_batch_size = 8;
  int64_t per_device_eval_batch_size = 8;
  int64_t gradient_accumulation_steps = 1;
  /// Move accumulated predictions to the host every N evaluation steps (default: at the end).
  std::optional<int64_t> eval_accumulation_steps;

  // ---- optimizer ----
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  /// Clip the global L2 norm of the gradients to this value (0 disables clipping).
  double max_grad_norm = 1.0;
  /// HF's default on torch >= 2.8 (adamw_torch_fused); kAdamWHf trains as kAdamWTorch.
  OptimizerName optim = OptimizerName::kAdamWTorchFused;

  // ---- schedule ----
  /// May be fractional: the last epoch is then partial.
  double num_train_epochs = 3.0;
  /// If > 0, the total number of optimizer steps; overrides num_train_epochs.
  int64_t max_steps = -1;
  SchedulerType lr_scheduler_type = SchedulerType::kLinear;
  /// The schedule's own arguments (HF's lr_scheduler_kwargs, its scheduler_specific_kwargs):
  /// num_cycles, lr_end / power, timescale, min_lr / min_lr_rate / warmup_lr_rate,
  /// num_decay_steps / num_stable_steps / warmup_type / decay_type / min_lr_ratio, by schedule;
  /// checked against lr_scheduler_type by validate(). Unset: none.
  std::optional<JsonObjectText> lr_scheduler_kwargs;
  /// Linear warm-up steps; a value below 1 is a ratio of the total optimizer steps (transformers
  /// 5: ceil(total x warmup_steps)). Values of 1 or more must be whole numbers.
  double warmup_steps = 0;
  /// Fraction of the total steps used for warm-up when warmup_steps is 0 (transformers 4's).
  double warmup_ratio = 0.0;

  // ---- reproducibility ----
  int64_t seed = 42;
  /// Seed of the data samplers; defaults to seed.
  std::optional<int64_t> data_seed;
  /// Deterministic algorithms everywhere (slower); implies seeding.
  bool full_determinism = false;

  // ---- logging ----
  /// Level of the main process (kPassive: the library's verbosity).
  LogLevel log_level = LogLevel::kPassive;
  /// Level of the other processes.
  LogLevel log_level_replica = LogLevel::kWarning;
  /// With multi-node training, whether each node's local main process logs as a main process.
  bool log_on_each_node = true;
  bool disable_tqdm = false;
  /// Integrations to report to: "none", "all" (every integration built in) or "tensorboard".
  std::vector<std::string> report_to = {"none"};
  /// TensorBoard's folder (--report_to tensorboard). Unset: $TENSORBOARD_LOGGING_DIR when set
  /// (transformers 5), else output_dir/runs/<Mon DD_HH-MM-SS>_<hostname> (HF's default_logdir).
  std::optional<std::string> logging_dir;

  // ---- data loading ----
  int64_t dataloader_num_workers = 0;
  bool dataloader_drop_last = false;
  bool dataloader_pin_memory = true;
  /// Batches each loader worker builds ahead (HF's dataloader_prefetch_factor); only with
  /// dataloader_num_workers > 0, where unset means 2.
  std::optional<int64_t> dataloader_prefetch_factor;
  /// Batch keys holding the labels; defaults to {"labels"}.
  std::optional<std::vector<std::string>> label_names;
  /// Order of the training examples (transformers 5's train_sampling_strategy): kRandom
  /// (reshuffled each epoch), kSequential (dataset order every epoch) or kGroupByLength; HF's
  /// batch_rebalance is refused as not supported yet.
  TrainSamplingStrategy train_sampling_strategy = TrainSamplingStrategy::kRandom;
  /// The older HF flag for train_sampling_strategy kGroupByLength; validate() keeps the two
  /// consistent.
  bool group_by_length = false;

  // ---- best model / resume ----
  bool load_best_model_at_end = false;
  std::optional<std::string> metric_for_best_model;
  std::optional<bool> greater_is_better;
  /// A checkpoint folder, or "true"/"latest" for the newest complete one in output_dir.
  std::optional<std::string> resume_from_checkpoint;
  bool ignore_data_skip = false;
  /// On SIGTERM/SIGINT finish the current optimizer step, save a checkpoint and exit
  /// (exit code 143 for SIGTERM, 130 for SIGINT); a second SIGINT aborts at once.
  bool save_on_signal = true;

  // ---- device / precision ----
  /// Alias: no_cuda. Unset (HF's default false): a GPU when this build has CUDA and one is
  /// visible, else the CPU. true: the CPU. false, given explicitly: a GPU is required, and
  /// select_device() refuses to fall back to the CPU.
  std::optional<bool> use_cpu;
  /// use_cpu as HF reads it: true only when --use_cpu was given.
  bool on_cpu_requested() const { return use_cpu.value_or(false); }
  /// float16 mixed precision: autocast of forward+loss and dynamic loss scaling (CUDA only).
  bool fp16 = false;
  /// bfloat16 mixed precision: autocast of forward+loss, no loss scaling (CPU and CUDA).
  bool bf16 = false;
  /// kAuto (native torch autocast), kApex (refused: a Python extension) or kCpuAmp (CPU
  /// autocast; CPU runs only).
  HalfPrecisionBackend half_precision_backend = HalfPrecisionBackend::kAuto;
  /// Apex AMP optimisation level; only apex reads it, so ctrainer keeps it for HF compatibility.
  std::string fp16_opt_level = "O1";
  /// Evaluate/predict outside training with the model cast to float16 (CUDA only) / bfloat16.
  bool fp16_full_eval = false;
  bool bf16_full_eval = false;
  /// TF32 matmuls on Ampere+ GPUs: true enables, false disables, unset keeps libtorch's default.
  std::optional<bool> tf32;
  double label_smoothing_factor = 0.0;
  /// NEFTune: while training, uniform noise of magnitude alpha / sqrt(T * hidden) on the input
  /// embeddings (transformers' neftune_post_forward_hook). Unset: none.
  std::optional<double> neftune_noise_alpha;
  /// Recompute activations in backward (--gradient_checkpointing, transformers 5's deprecated
  /// alias of --activation_checkpointing; what the Trainer reads).
  bool gradient_checkpointing = false;
  /// transformers 5's name for gradient_checkpointing: when given it wins over the alias.
  /// validate() folds it into gradient_checkpointing and clears it; training_args.json writes
  /// both names with the one value, as transformers does.
  std::optional<bool> activation_checkpointing;

  // ---- distributed ----
  int64_t local_rank = -1;
  /// Unset: nccl on a GPU, gloo otherwise.
  std::optional<DdpBackend> ddp_backend;
  /// Seconds.
  int64_t ddp_timeout = 1800;
  /// For a model with a token-level loss (Model::accepts_loss_kwargs: causal LMs), divide the
  /// summed loss by the label tokens of every rank's accumulation window rather than of this
  /// rank's, so that each token weighs the same whatever rank holds it (HF 5's default).
  bool average_tokens_across_devices = true;
  std::optional<bool> ddp_find_unused_parameters;
  std::optional<int64_t> ddp_bucket_cap_mb;
  std::string fsdp;
  std::optional<std::string> fsdp_config;
  std::optional<std::string> deepspeed;
  /// Where a deepspeed value that no flag gave came from, to name it in messages (accelerate
  /// launch's DeepSpeed plugin). Not a flag.
  std::optional<std::string> deepspeed_origin;
  /// The files of fsdp_config and deepspeed as validate() read them (args/sharding_files.h);
  /// the Trainer resolves these instead of reading the files again. Not a flag.
  std::shared_ptr<const ShardingFiles> sharding_files;

  /// Checks ranges and contradictions, fills derived defaults as transformers does (do_eval,
  /// eval_steps, run_name, metric_for_best_model, greater_is_better; dataloader_pin_memory=false
  /// with use_cpu) and refuses features that have not landed (NotSupportedYet). Throws
  /// ArgumentError naming the flag. Idempotent.
  void validate();

  /// The seed used by the data samplers.
  int64_t sampler_seed() const { return data_seed.value_or(seed); }
  /// The labels keys (label_names or {"labels"}).
  std::vector<std::string> label_keys() const {
    return label_names.value_or(std::vector<std::string>{"labels"});
  }
};

/// --report_to integrations transformers knows that ctrainer has not built (refused with "not
/// supported yet").
const std::vector<std::string>& report_to_integrations_not_built();

/// All fields, resolved, as one JSON object (written to output_dir/training_args.json).
nlohmann::json to_json(const TrainingArguments& args);

}  // namespace ctrainer
