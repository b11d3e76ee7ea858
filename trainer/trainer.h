#pragma once
/// \file Trainer: the Hugging Face Trainer for libtorch models. Subclass it and override the
/// hooks (get_*_dataloader, create_optimizer/scheduler, compute_loss, training_step,
/// prediction_step, evaluate, log) to customise a step; add TrainerCallbacks to observe or steer
/// the loop.
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <ctrainer/distributed/process_info.h>
#include <ctrainer/distributed/strategy.h>
#include <ctrainer/models/model.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/callbacks/trainer_callback.h>
#include <ctrainer/trainer/checkpoint/checkpoint_manager.h>
#include <ctrainer/trainer/data/batch_stream.h>
#include <ctrainer/trainer/data/collator.h>
#include <ctrainer/trainer/data/data_loader.h>
#include <ctrainer/trainer/data/dataset.h>
#include <ctrainer/trainer/data/train_sampler.h>
#include <ctrainer/trainer/precision/precision.h>
#include <ctrainer/trainer/runtime/input_token_counter.h>
#include <ctrainer/trainer/runtime/step_profiler.h>
#include <ctrainer/trainer/sharding/sharding_config.h>
#include <ctrainer/trainer/trainer_state.h>

namespace torch::optim {
class Optimizer;
}

namespace ctrainer {

class LRScheduler;
class Preemption;
class ProcessGroup;

/// Predictions and labels of a whole evaluation set, in dataset order (HF EvalPrediction).
struct EvalPrediction {
  at::Tensor predictions;
  at::Tensor label_ids;
};
using ComputeMetricsFn = std::function<Metrics(const EvalPrediction&)>;

/// Result of Trainer::train (HF TrainOutput).
struct TrainOutput {
  int64_t global_step = 0;
  /// Mean training loss over all optimizer steps.
  double training_loss = 0;
  /// train_runtime, train_samples_per_second, train_steps_per_second, total_flos, train_loss,
  /// epoch.
  Metrics metrics;
};

/// Result of Trainer::predict (HF PredictionOutput). Tensors are on the host; rows of different
/// length are padded with -100.
struct PredictionOutput {
  at::Tensor predictions;
  at::Tensor label_ids;
  Metrics metrics;
};

/// Result of Trainer::prediction_step. Undefined tensors mean "not computed".
struct PredictionStepOutput {
  at::Tensor loss;
  at::Tensor logits;
  at::Tensor labels;
};

/// Result of Trainer::compute_loss.
struct LossAndOutputs {
  at::Tensor loss;
  ModelOutput outputs;
};

/// Everything besides the model and the arguments a Trainer may be given (all optional).
struct TrainerComponents {
  std::shared_ptr<Dataset> train_dataset;
  std::shared_ptr<Dataset> eval_dataset;
  /// Defaults to DefaultDataCollator.
  std::shared_ptr<DataCollator> data_collator;
  ComputeMetricsFn compute_metrics;
  /// Added after the default callbacks, before the progress/printer callback.
  std::vector<std::shared_ptr<TrainerCallback>> callbacks;
  /// A ready optimizer (and optionally scheduler) replace create_optimizer / create_scheduler.
  std::shared_ptr<torch::optim::Optimizer> optimizer;
  std::shared_ptr<LRScheduler> lr_scheduler;
  /// A ready precision policy replaces the one chosen from the arguments (--fp16/--bf16): e.g.
  /// a DeepSpeed-style loss scaler, or loss scaling in fp32 to test overflow handling on a CPU.
  std::shared_ptr<Precision> precision;
};

/// Trains, evaluates and predicts with Hugging Face Trainer semantics.
class Trainer {
 public:
  /// Validates `args`, sets up logging, seeds (or enables full determinism), picks the device
  /// and moves the model there, and installs the callbacks. Throws ArgumentError on bad input.
  Trainer(std::shared_ptr<Model> model, TrainingArguments args, TrainerComponents components = {});
  virtual ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Runs the training loop; returns the step count, mean loss and speed metrics.
  virtual TrainOutput train();
  /// Loss and compute_metrics over `eval_dataset` (default: the one given at construction);
  /// keys are prefixed with `metric_key_prefix` + "_". Logs the metrics and fires on_evaluate.
  virtual Metrics evaluate(std::shared_ptr<Dataset> eval_dataset = nullptr,
                           const std::string& metric_key_prefix = "eval");
  /// Predictions (and labels and metrics when the dataset has labels); fires on_predict.
  virtual PredictionOutput predict(std::shared_ptr<Dataset> test_dataset,
                                   const std::string& metric_key_prefix = "test");

  // ---- hooks -------------------------------------------------------------------------------
  /// Batches of the train set in train_sampling_strategy order: shuffled (seeded by data_seed or
  /// seed, reshuffled each epoch), sequential or grouped by length.
  virtual std::shared_ptr<DataLoader> get_train_dataloader();
  /// Sequential batches of `eval_dataset` (default: the one given at construction).
  virtual std::shared_ptr<DataLoader> get_eval_dataloader(
      std::shared_ptr<Dataset> eval_dataset = nullptr);
  virtual std::shared_ptr<DataLoader> get_test_dataloader(std::shared_ptr<Dataset> test_dataset);
  /// Creates the optimizer and the scheduler unless they were given.
  virtual void create_optimizer_and_scheduler(int64_t num_training_steps);
  /// AdamW / SGD from the arguments, without weight decay on biases and norm weights.
  virtual std::shared_ptr<torch::optim::Optimizer> create_optimizer();
  /// The lr_scheduler_type schedule with warmup over `num_training_steps`.
  virtual std::shared_ptr<LRScheduler> create_scheduler(
      int64_t num_training_steps, std::shared_ptr<torch::optim::Optimizer> optimizer = nullptr);
  /// The loss of a batch on the device: the model's loss, or the label-smoothed loss of its
  /// logits when label_smoothing_factor > 0. Must return the mean over the batch's examples.
  /// `num_items_in_batch` is the number of examples in the whole accumulation window; for a
  /// model that accepts_loss_kwargs() (causal LMs) it is HF's: the window's label tokens (of
  /// every rank with average_tokens_across_devices), and the loss is the model's
  /// forward_with_num_items() (this batch's token losses summed, divided by the count), times
  /// the world size when the count covers every rank, as transformers computes it.
  virtual LossAndOutputs compute_loss(Model& model, const Batch& inputs,
                                      bool return_outputs = false,
                                      std::optional<int64_t> num_items_in_batch = std::nullopt);
  /// One micro-batch: moves it to the device, computes the loss, weights it by the batch's share
  /// of the window's examples (so any accumulation window gives the large-batch gradient; a
  /// token-level loss is already normalised by the window's tokens and is not weighted) and
  /// runs backward. Returns the weighted loss, detached. An override that runs the model itself
  /// must call before_forward(model) first: under ZeRO-3 it gathers the parameters outside the
  /// wrapped units (they hold no memory otherwise).
  virtual at::Tensor training_step(Model& model, const Batch& inputs,
                                   std::optional<int64_t> num_items_in_batch = std::nullopt);
  /// Loss, logits and labels of an evaluation batch (no gradients). Overrides: see training_step
  /// about before_forward.
  virtual PredictionStepOutput prediction_step(Model& model, const Batch& inputs,
                                               bool prediction_loss_only);
  /// Adds epoch and step, appends to state().log_history and fires on_log.
  virtual void log(nlohmann::json logs);
  /// Writes output_dir/checkpoint-<global_step> atomically (weights, optimizer, scheduler, RNG,
  /// trainer state, arguments; see docs/checkpoint-format.md), tracks the best checkpoint,
  /// rotates old ones (save_total_limit) and fires on_save. Returns the folder.
  virtual std::string save_checkpoint();
  /// HF save_model: the model's weights (model.safetensors, HF state-dict names) and config.json
  /// in `output_dir` (default: args().output_dir), loadable with from_pretrained. Only the world
  /// process zero writes.
  virtual void save_model(const std::optional<std::string>& output_dir = std::nullopt);
  /// HF save_state: output_dir/trainer_state.json (log history, best checkpoint, ...), written
  /// by the world process zero.
  void save_state() const;
  /// HF log_metrics: the "***** <split> metrics *****" block, one aligned "  key = value" line
  /// per metric, printed to stdout by the world process zero.
  void log_metrics(const std::string& split, const Metrics& metrics) const;
  /// HF save_metrics: output_dir/<split>_results.json, merged into output_dir/all_results.json,
  /// written by the world process zero.
  void save_metrics(const std::string& split, const Metrics& metrics) const;

  // ---- callbacks ---------------------------------------------------------------------------
  void add_callback(std::shared_ptr<TrainerCallback> callback);
  /// Removes and returns the callback called `name` (null if absent).
  std::shared_ptr<TrainerCallback> pop_callback(const std::string& name);
  const CallbackHandler& callback_handler() const { return callbacks_; }

  // ---- accessors ---------------------------------------------------------------------------
  const TrainingArguments& args() const { return args_; }
  TrainerState& state() { return state_; }
  TrainerControl& control() { return control_; }
  Model& model() { return *model_; }
  std::shared_ptr<Model> model_ptr() const { return model_; }
  std::shared_ptr<torch::optim::Optimizer> optimizer() const { return optimizer_; }
  std::shared_ptr<LRScheduler> lr_scheduler() const { return lr_scheduler_; }
  const c10::Device& device() const { return device_; }
  const ProcessInfo& process() const { return process_; }
  /// Autocast dtype, loss scaler and full-evaluation dtype of this run.
  Precision& precision() { return *precision_; }
  /// The sharding the run asked for (--fsdp / --deepspeed), resolved when the Trainer was built;
  /// its DeepSpeed config is finalized when train() starts.
  const ShardingSetup& sharding() const { return sharding_; }

 protected:
  /// Backward through the strategy (use it from an overridden training_step).
  void backward(const at::Tensor& loss);
  /// What the strategy needs before each forward of the model (use it from an overridden
  /// training_step or prediction_step that runs the model itself).
  void before_forward(Model& model) { strategy_->before_forward(model); }
  /// What get_train_dataloader's sampler is made from (the arguments' order, seed, batch and
  /// ranks); a subclass changes the order here (Seq2SeqTrainer: sortish_sampler).
  virtual TrainSamplerOptions train_sampler_options() const;
  /// What output_dir/training_args.json holds: the arguments, and a subclass's own fields.
  virtual nlohmann::json training_args_json() const;
  /// Fires `event` on every callback with the run's objects in the context.
  template <typename Event>
  void fire(Event event, const Metrics* metrics = nullptr, const nlohmann::json* logs = nullptr) {
    CallbackContext ctx;
    ctx.model = model_.get();
    ctx.optimizer = optimizer_.get();
    ctx.lr_scheduler = lr_scheduler_.get();
    ctx.train_dataloader = train_dataloader_.get();
    ctx.eval_dataloader = eval_dataloader_.get();
    ctx.metrics = metrics;
    ctx.logs = logs;
    callbacks_.call(event, args_, state_, control_, ctx);
  }

 private:
  struct EvalLoopOutput {
    at::Tensor predictions;
    at::Tensor label_ids;
    Metrics metrics;
    int64_t num_samples = 0;
  };
  EvalLoopOutput evaluation_loop(DataLoader& loader, bool prediction_loss_only,
                                 const std::string& metric_key_prefix);
  /// HF's _maybe_log_save_evaluate: obeys should_log / should_evaluate / should_save.
  void maybe_log_save_evaluate();
  void update_best_metric(const Metrics& metrics);
  /// HF's --fp16_full_eval / --bf16_full_eval: outside training, the model is cast (and stays
  /// cast) to the full-evaluation dtype.
  void cast_model_for_full_eval();
  void write_training_args() const;
  double learning_rate() const;

  // ---- the training loop (trainer.cpp) -------------------------------------------------------
  /// What train() will do, fixed before the first step.
  struct TrainingPlan {
    int64_t batches_per_epoch = 0;
    int64_t max_steps = 0;
    int64_t num_train_epochs = 0;
    double num_train_samples = 0;
    int64_t total_train_batch_size = 0;
    /// The settings a checkpoint must share to resume into this run.
    LoopShape shape;
  };
  /// Steps, epochs and samples from the loader and the arguments (HF's rules: max_steps wins,
  /// a short last window still steps); checks that every rank has the same train set.
  TrainingPlan plan_training(const DataLoader& loader) const;
  /// The run's shape that a checkpoint records and a resume must match (one place builds it).
  LoopShape loop_shape() const;
  /// The loader settings of --dataloader_* for batches of `batch_size` (train and eval alike).
  DataLoaderOptions dataloader_options(int64_t batch_size) const;
  /// A fresh TrainerState for `plan` and zeroed running sums.
  void start_state(const TrainingPlan& plan);
  void log_training_banner(const TrainingPlan& plan) const;
  /// One epoch from batch `first_batch` on: accumulation windows, optimizer steps, the step
  /// callbacks, logging / evaluation / saving, and the preemption check after each step.
  void train_epoch(int64_t epoch, int64_t first_batch, const TrainingPlan& plan,
                   Preemption* preemption);
  /// The end of an accumulation window: unscale (skip on overflow), clip, optimizer step,
  /// scheduler step, zero the gradients, with HF's callbacks in between.
  void apply_accumulated_gradients();
  /// HF's num_items_in_batch for a token-level loss: the window's label tokens
  /// (count_label_tokens), summed over the ranks with average_tokens_across_devices.
  int64_t count_loss_items(const std::vector<Batch>& window);
  /// The final loss and speed metrics, logged; fires on_train_end.
  TrainOutput finish_training(std::chrono::steady_clock::time_point start,
                              const TrainingPlan& plan);

  // ---- checkpoints (trainer_checkpoint.cpp) --------------------------------------------------
  CheckpointParts checkpoint_parts();
  /// Restores weights, optimizer, scheduler, scaler, trainer state, callbacks and the loop's
  /// running sums from `folder`; returns where the data resumes. RNG comes later (train()).
  DataPosition resume_from(const std::filesystem::path& folder, const TrainingPlan& plan);
  /// Preemption: checkpoints the finished step (unless already saved) and exits 128 + signal.
  [[noreturn]] void exit_on_signal(int signal);

  std::shared_ptr<Model> model_;
  TrainingArguments args_;
  TrainerComponents components_;
  ProcessInfo process_;
  ShardingSetup sharding_;
  c10::Device device_{c10::kCPU};
  /// The process group of a multi-process run (null for one process); declared before the
  /// strategy that uses it, so it is destroyed after it.
  std::unique_ptr<ProcessGroup> process_group_;
  std::unique_ptr<Strategy> strategy_;
  std::shared_ptr<Precision> precision_;
  TrainerState state_;
  TrainerControl control_;
  CallbackHandler callbacks_;
  std::shared_ptr<torch::optim::Optimizer> optimizer_;
  std::shared_ptr<LRScheduler> lr_scheduler_;
  std::shared_ptr<DataLoader> train_dataloader_;
  /// The loader of the latest evaluate() or predict() (HF: callback_handler.eval_dataloader).
  std::shared_ptr<DataLoader> eval_dataloader_;
  /// The batches of the running epoch, prefetched by the loader's workers (a member so that
  /// exit_on_signal can stop the workers before the process exits).
  std::unique_ptr<BatchStream> train_batches_;

  // Running training-loss bookkeeping (HF: tr_loss, _total_loss_scalar, _globalstep_last_logged).
  at::Tensor tr_loss_;
  at::Tensor grad_norm_;
  /// The learning rate the last optimizer step of the running epoch used (what HF logs).
  std::optional<double> step_learning_rate_;
  double total_loss_scalar_ = 0;
  int64_t globalstep_last_logged_ = 0;
  /// include_num_input_tokens_seen's count, the run's start and the count it started from (for
  /// the logs' train_tokens_per_second, as transformers: this session's tokens only).
  InputTokenCounter input_tokens_;
  std::chrono::steady_clock::time_point train_start_{};
  int64_t initial_tokens_seen_ = 0;
  /// Whether the current micro-batch ends an accumulation window (gradients are synchronised).
  bool sync_gradients_ = true;
  /// Where the loop is, saved in checkpoints so a resumed run continues with the next batch.
  DataPosition position_;
  /// Saves, finds and loads checkpoint-<step> folders.
  std::unique_ptr<CheckpointManager> checkpoints_;
  /// The last evaluation produced a new best metric (the next save becomes the best checkpoint).
  bool is_new_best_ = false;
  /// train() is running (HF is_in_train): evaluation then keeps the training dtype.
  bool in_train_ = false;
  /// The dtype the model was cast to for full evaluation, if it was.
  std::optional<at::ScalarType> model_eval_dtype_;
  /// --profile_steps: times the phases of the first steps (disabled: measures nothing).
  StepProfiler profiler_{0, {}, {}};
  /// Logs the step profile and writes output_dir/profile.json (world process zero).
  void write_step_profile() const;
};

}  // namespace ctrainer
