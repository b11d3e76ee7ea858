#include <ctrainer/trainer/trainer.h>

#include <cmath>
#include <exception>
#include <filesystem>

#include <torch/cuda.h>
#include <torch/optim/optimizer.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/distributed/process_group.h>
#include <ctrainer/models/linear_kernel.h>
#include <ctrainer/trainer/callbacks/default_flow_callback.h>
#include <ctrainer/trainer/callbacks/log_file_callback.h>
#include <ctrainer/trainer/callbacks/progress_callback.h>
#include <ctrainer/trainer/callbacks/report_to.h>
#include <ctrainer/trainer/evaluation/metrics_report.h>
#include <ctrainer/trainer/loss/loss_items.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>
#include <ctrainer/trainer/runtime/cpu_runtime.h>
#include <ctrainer/trainer/runtime/device.h>
#include <ctrainer/trainer/runtime/large_buffer_cache.h>
#include <ctrainer/trainer/runtime/logging.h>
#include <ctrainer/trainer/runtime/seed.h>
#include <ctrainer/trainer/runtime/speed_metrics.h>
#include <ctrainer/trainer/runtime/strategy_factory.h>
#include <ctrainer/trainer/signals/preemption.h>

namespace ctrainer {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// HF: a logging/eval/save interval below 1 is a ratio of the total steps.
int64_t resolve_interval(double value, int64_t max_steps) {
  if (value < 1) return static_cast<int64_t>(std::ceil(static_cast<double>(max_steps) * value));
  return static_cast<int64_t>(value);
}

}  // namespace

Trainer::Trainer(std::shared_ptr<Model> model, TrainingArguments args, TrainerComponents components)
    : model_(std::move(model)), args_(std::move(args)), components_(std::move(components)) {
  if (!model_) throw ArgumentError("Trainer needs a model");
  args_.validate();
  process_ = ProcessInfo::from_environment(args_.local_rank);
  logging::setup(args_, process_);
  configure_intra_op_threads(process_.local_world_size);
  keep_freed_memory();
  install_large_buffer_cache();  // the buffers glibc would unmap (large_buffer_cache.h)
  warn_if_reference_blas();
  cpu_linear_preference();  // a bad CTRAINER_CPU_LINEAR stops the run here, before any step
  if (args_.full_determinism)
    enable_full_determinism(args_.seed);
  else
    set_seed(args_.seed);

  device_ = select_device(args_, process_.local_rank);
  // Before precision, gradient checkpointing and the strategy: a DeepSpeed config decides
  // fp16/bf16, loss scaling and clipping, fsdp_config activation_checkpointing recomputation.
  sharding_ = resolve_sharding(args_, process_, *model_);
  const std::optional<GradScalerOptions> ds_loss_scaling =
      sharding_.deepspeed_settings ? sharding_.deepspeed_settings->loss_scaling : std::nullopt;
  const std::optional<at::ScalarType> parameter_dtype =
      sharding_.options.parameter_dtype != at::kFloat
          ? std::optional<at::ScalarType>(sharding_.options.parameter_dtype)
          : std::nullopt;
  precision_ = components_.precision
                   ? components_.precision
                   : Precision::from_args(args_, device_, ds_loss_scaling, parameter_dtype);
  if (precision_->device_type() != device_.type())
    throw ArgumentError("TrainerComponents::precision was made for " +
                        c10::DeviceTypeName(precision_->device_type(), true) +
                        " but the Trainer runs on " + device_.str());
  apply_tf32(args_.tf32, device_);
  // Before the strategy wraps the model: recomputation is a property of the model's layers.
  // Models without support refuse with an error naming the flag.
  if (args_.gradient_checkpointing) model_->gradient_checkpointing_enable();
  // Noise only while training: evaluate() runs the model in eval mode, as HF's hook skips it.
  if (args_.neftune_noise_alpha) model_->set_neftune_noise_alpha(args_.neftune_noise_alpha);
  // One process: SingleDeviceStrategy. Several (or any sharding): the process group is joined
  // here (collective), every rank's arguments and model are checked against rank 0's, and the
  // strategy's setup broadcasts rank 0's weights (ZeRO: and shards them).
  TrainingStrategy training =
      create_training_strategy(args_, process_, device_, *model_, sharding_.options);
  process_group_ = std::move(training.group);
  strategy_ = std::move(training.strategy);
  strategy_->setup(*model_, device_);
  checkpoints_ = std::make_unique<CheckpointManager>(args_, process_, *strategy_);

  state_.is_local_process_zero = process_.is_local_process_zero();
  state_.is_world_process_zero = process_.is_world_process_zero();

  // HF order: flow control, integrations, the user's callbacks, then console output.
  callbacks_.add(std::make_shared<DefaultFlowCallback>());
  callbacks_.add(std::make_shared<LogFileCallback>());
  for (auto& cb : report_to_callbacks(args_)) callbacks_.add(std::move(cb));
  for (auto& cb : components_.callbacks) callbacks_.add(cb);
  if (args_.disable_tqdm)
    callbacks_.add(std::make_shared<PrinterCallback>());
  else
    callbacks_.add(std::make_shared<ProgressCallback>());
  fire(&TrainerCallback::on_init_end);
}

Trainer::~Trainer() {
  train_batches_.reset();
  checkpoints_.reset();
  strategy_.reset();  // it uses the process group
  // Leaving because of an exception: the other ranks are elsewhere (or gone), so the group's
  // final barrier could only time out; release it at once instead.
  if (process_group_ && std::uncaught_exceptions() > 0) process_group_->abort();
}

void Trainer::add_callback(std::shared_ptr<TrainerCallback> callback) {
  callbacks_.add(std::move(callback));
}

std::shared_ptr<TrainerCallback> Trainer::pop_callback(const std::string& name) {
  return callbacks_.pop(name);
}

// ---- training loop -----------------------------------------------------------------------------

TrainOutput Trainer::train() {
  const auto start = std::chrono::steady_clock::now();
  in_train_ = true;
  struct ResetInTrain {
    bool& flag;
    ~ResetInTrain() { flag = false; }
  } reset_in_train{in_train_};
  train_dataloader_ = get_train_dataloader();
  profiler_ = StepProfiler(args_.profile_steps,
                           device_.is_cuda() ? std::function<void()>([index = device_.index()] {
                             torch::cuda::synchronize(index);
                           })
                                             : std::function<void()>(),
                           collective_wait_seconds);
  const TrainingPlan plan = plan_training(*train_dataloader_);
  start_state(plan);
  // transformers' trainer_config_finalize: the schedule's "auto" values, then one error listing
  // every value of the DeepSpeed config that disagrees with the arguments.
  finalize_sharding(sharding_, args_, *model_, plan.max_steps);
  create_optimizer_and_scheduler(plan.max_steps);
  // A sharded strategy makes the optimizer step this rank's slices only.
  strategy_->setup_optimizer(*optimizer_);
  log_training_banner(plan);

  const std::optional<std::filesystem::path> resume = checkpoints_->resume_checkpoint();
  const DataPosition start_at = resume ? resume_from(*resume, plan) : DataPosition{};
  // Only once the checkpoint to resume from is accepted: a refused one leaves output_dir as it
  // was, so the corrected command is not then refused for a non-empty output_dir.
  write_training_args();
  position_ = start_at;
  strategy_->zero_grad(*model_);
  control_.new_training();
  fire(&TrainerCallback::on_train_begin);
  // Last, so that nothing between the checkpoint's capture and the first step draws numbers.
  if (resume) checkpoints_->restore_rng(*resume);
  input_tokens_ = InputTokenCounter(args_.include_num_input_tokens_seen);
  input_tokens_.start(device_);
  train_start_ = start;
  initial_tokens_seen_ = state_.num_input_tokens_seen;
  std::optional<Preemption> preemption;
  if (args_.save_on_signal) preemption.emplace(*strategy_, device_);
  // What loading the model, data and checkpoint freed is not what the steps allocate.
  release_freed_memory();

  for (int64_t epoch = start_at.epoch;
       epoch < plan.num_train_epochs && state_.global_step < plan.max_steps; ++epoch) {
    train_epoch(epoch, epoch == start_at.epoch ? start_at.batches_consumed : 0, plan,
                preemption ? &*preemption : nullptr);
    if (control_.should_training_stop) break;
  }
  if (args_.load_best_model_at_end) checkpoints_->load_best_model(state_, *model_);
  return finish_training(start, plan);
}

void Trainer::train_epoch(int64_t epoch, int64_t first_batch, const TrainingPlan& plan,
                          Preemption* preemption) {
  const int64_t batches = plan.batches_per_epoch;
  const int64_t ga = args_.gradient_accumulation_steps;
  train_dataloader_->set_epoch(epoch);
  control_.new_epoch();
  fire(&TrainerCallback::on_epoch_begin);
  step_learning_rate_.reset();  // HF: per epoch, so an epoch without a step logs the current lr
  // Workers build the epoch's remaining batches ahead, in index order; a resumed epoch starts at
  // the next unseen batch, and the skipped ones are never materialised.
  train_batches_ = std::make_unique<BatchStream>(*train_dataloader_, first_batch, batches);
  for (int64_t first = first_batch;
       first < batches && !control_.should_epoch_stop && !control_.should_training_stop;
       first += ga) {
    // The whole window is fetched first (HF's get_batch_samples) so that each micro-batch's
    // loss can be weighted by its share of the window's examples, or, for a token-level loss,
    // divided by the window's label tokens.
    const int64_t window_size = std::min(ga, batches - first);
    profiler_.begin_step(state_.global_step + 1);
    std::vector<Batch> window;
    int64_t window_items = 0;
    {
      auto timer = profiler_.measure(StepPhase::kDataWait);
      for (int64_t i = 0; i < window_size; ++i) {
        window.push_back(train_batches_->next());
        window_items += window.back().size();
      }
    }
    if (model_->accepts_loss_kwargs() && window.front().contains("labels"))
      window_items = count_loss_items(window);
    for (int64_t i = 0; i < window_size; ++i) {
      const Batch& batch = window[static_cast<size_t>(i)];
      position_ = {epoch, first + i + 1};
      sync_gradients_ = (i == window_size - 1);
      if (i == 0) {
        control_.new_step();
        fire(&TrainerCallback::on_step_begin);
      }
      input_tokens_.count(batch);
      tr_loss_.add_(training_step(*model_, batch, window_items).to(tr_loss_.scalar_type()));
      state_.total_flos += model_->floating_point_ops(batch);
      if (sync_gradients_) {
        apply_accumulated_gradients();
        state_.global_step += 1;
        state_.epoch = static_cast<double>(epoch) +
                       static_cast<double>(first + i + 1) / static_cast<double>(batches);
        fire(&TrainerCallback::on_step_end);
        maybe_log_save_evaluate();
        if (profiler_.end_step(state_.global_step)) write_step_profile();
        if (const int signal = preemption ? preemption->agreed_signal() : 0) exit_on_signal(signal);
      } else {
        fire(&TrainerCallback::on_substep_end);
      }
      if (control_.should_epoch_stop || control_.should_training_stop) break;
    }
  }
  train_batches_.reset();  // stops prefetching when the epoch ends early
  if (!control_.should_training_stop) position_ = {epoch, batches};
  fire(&TrainerCallback::on_epoch_end);
  maybe_log_save_evaluate();
}

int64_t Trainer::count_loss_items(const std::vector<Batch>& window) {
  const int64_t tokens = count_label_tokens(window, model_->loss_shifts_labels());
  if (!args_.average_tokens_across_devices || strategy_->world_size() == 1) return tokens;
  // A collective on every rank (all reach this point for every window), and one host
  // synchronisation per optimizer step: the count is a plain integer for compute_loss.
  const at::Tensor local = at::full({}, static_cast<double>(tokens),
                                    at::TensorOptions().dtype(at::kDouble).device(device_));
  return std::llround(strategy_->mean_across_processes(local).item<double>() *
                      static_cast<double>(strategy_->world_size()));
}

void Trainer::apply_accumulated_gradients() {
  // Unscaled before clipping, so grad_norm and clipping see the true gradients; global_step
  // advances even when an overflow skips the step.
  bool skip_step = false;
  {
    auto timer = profiler_.measure(StepPhase::kClip);
    skip_step = precision_->unscale_and_check_overflow(*model_, *strategy_, state_.global_step + 1);
    // max_grad_norm 0 only measures the norm: transformers 5 logs grad_norm either way.
    grad_norm_ = strategy_->clip_grad_norm(*model_, args_.max_grad_norm);
  }
  fire(&TrainerCallback::on_pre_optimizer_step);
  auto timer = profiler_.measure(StepPhase::kOptimizer);
  if (!skip_step) strategy_->optimizer_step(*optimizer_);
  fire(&TrainerCallback::on_optimizer_step);
  // transformers 5 logs the learning rate this step used, read before the scheduler moves on
  // (transformers 4 logged the next step's).
  step_learning_rate_ = learning_rate();
  if (!skip_step) lr_scheduler_->step();
  strategy_->zero_grad(*model_);
}

Trainer::TrainingPlan Trainer::plan_training(const DataLoader& loader) const {
  TrainingPlan plan;
  plan.batches_per_epoch = loader.num_batches();
  if (plan.batches_per_epoch == 0)
    throw ArgumentError("the train dataset yields no batch (" +
                        std::to_string(loader.dataset().size()) +
                        " examples, --per_device_train_batch_size " +
                        std::to_string(args_.per_device_train_batch_size) +
                        (args_.dataloader_drop_last ? ", --dataloader_drop_last" : "") + ")");
  // Every rank must see the same dataset: the samplers shard one order, and a rank with more
  // batches would wait forever in a collective the others never start.
  require_same_on_every_rank(*strategy_, "the train dataset",
                             {std::to_string(loader.dataset().size()) + " examples, " +
                              std::to_string(plan.batches_per_epoch) + " batches per epoch"},
                             "every rank must load the same train dataset");
  const int64_t ga = args_.gradient_accumulation_steps;
  // A short last window still makes an optimizer step, so an epoch has ceil(batches / ga) updates.
  const int64_t updates_per_epoch = std::max<int64_t>(ceil_div(plan.batches_per_epoch, ga), 1);
  plan.total_train_batch_size = args_.per_device_train_batch_size * ga * strategy_->world_size();
  if (args_.max_steps > 0) {
    plan.max_steps = args_.max_steps;
    plan.num_train_epochs = ceil_div(plan.max_steps, updates_per_epoch);
    plan.num_train_samples = static_cast<double>(plan.max_steps * plan.total_train_batch_size);
  } else {
    plan.max_steps = static_cast<int64_t>(std::ceil(args_.num_train_epochs * updates_per_epoch));
    plan.num_train_epochs = static_cast<int64_t>(std::ceil(args_.num_train_epochs));
    plan.num_train_samples = static_cast<double>(loader.dataset().size()) * args_.num_train_epochs;
  }
  plan.shape = loop_shape();
  return plan;
}

LoopShape Trainer::loop_shape() const {
  return {strategy_->world_size(), args_.per_device_train_batch_size,
          args_.gradient_accumulation_steps,
          train_dataloader_ ? train_dataloader_->dataset().size() : 0};
}

void Trainer::start_state(const TrainingPlan& plan) {
  state_ = TrainerState();
  state_.is_local_process_zero = process_.is_local_process_zero();
  state_.is_world_process_zero = process_.is_world_process_zero();
  state_.max_steps = plan.max_steps;
  state_.num_train_epochs = plan.num_train_epochs;
  state_.train_batch_size = args_.per_device_train_batch_size;
  state_.logging_steps = resolve_interval(args_.logging_steps, plan.max_steps);
  // Unset eval_steps (no steps evaluation) keeps TrainerState's 500, as HF's compute_steps.
  if (args_.eval_steps) state_.eval_steps = resolve_interval(*args_.eval_steps, plan.max_steps);
  state_.save_steps = resolve_interval(args_.save_steps, plan.max_steps);
  // HF records the control's state from the start; checkpoints update it (save_checkpoint).
  state_.stateful_callbacks["TrainerControl"] = control_.state();
  state_.epoch = 0.0;
  // The loop's running sums (HF: tr_loss, _total_loss_scalar, _globalstep_last_logged).
  tr_loss_ = at::zeros({}, at::TensorOptions().device(device_).dtype(at::kFloat));
  grad_norm_ = at::Tensor();
  total_loss_scalar_ = 0;
  globalstep_last_logged_ = 0;
  is_new_best_ = false;
}

void Trainer::log_training_banner(const TrainingPlan& plan) const {
  auto log = logging::logger();
  log->info("***** Running training *****");
  log->info("  Num examples = {}", train_dataloader_->dataset().size());
  log->info("  Num Epochs = {}", plan.num_train_epochs);
  log->info("  Instantaneous batch size per device = {}", args_.per_device_train_batch_size);
  log->info("  Total train batch size (w. parallel, distributed & accumulation) = {}",
            plan.total_train_batch_size);
  log->info("  Gradient Accumulation steps = {}", args_.gradient_accumulation_steps);
  log->info("  Total optimization steps = {}", plan.max_steps);
  int64_t trainable = 0;
  for (const auto& p : model_->parameters())
    if (p.requires_grad()) trainable += p.numel();
  log->info("  Number of trainable parameters = {}", trainable);
  log->info("  Precision = {}", precision_->describe());
}

TrainOutput Trainer::finish_training(std::chrono::steady_clock::time_point start,
                                     const TrainingPlan& plan) {
  // Loss of steps after the last logging step still counts towards the mean training loss.
  total_loss_scalar_ += strategy_->mean_across_processes(tr_loss_).item<double>();
  input_tokens_.add_pending_to(*strategy_, state_.num_input_tokens_seen);
  tr_loss_.zero_();
  const double train_loss =
      total_loss_scalar_ / std::max<double>(static_cast<double>(state_.global_step), 0.001);
  Metrics metrics =
      speed_metrics("train", start, plan.num_train_samples, static_cast<double>(plan.max_steps));
  metrics["total_flos"] = state_.total_flos;
  metrics["train_loss"] = train_loss;
  this->log(metrics_to_json(metrics));
  if (state_.epoch) metrics["epoch"] = *state_.epoch;
  // A run shorter than the profiled window still reports the steps it timed.
  if (profiler_.enabled() && !profiler_.complete()) write_step_profile();
  fire(&TrainerCallback::on_train_end);
  return TrainOutput{state_.global_step, train_loss, metrics};
}

// ---- logging -----------------------------------------------------------------------------------

void Trainer::log(nlohmann::json logs) {
  if (state_.epoch) logs["epoch"] = *state_.epoch;
  if (args_.include_num_input_tokens_seen != InputTokensSeen::kNo)
    logs["num_input_tokens_seen"] = state_.num_input_tokens_seen;
  nlohmann::json entry = logs;
  entry["step"] = state_.global_step;
  state_.log_history.push_back(entry);
  control_.should_log = false;  // HF's CallbackHandler.on_log, before the callbacks see it
  fire(&TrainerCallback::on_log, nullptr, &logs);
}

void Trainer::write_training_args() const {
  if (!process_.is_world_process_zero()) return;
  std::filesystem::create_directories(args_.output_dir);
  write_json_file(std::filesystem::path(args_.output_dir) / "training_args.json",
                  training_args_json());
}

nlohmann::json Trainer::training_args_json() const {
  return to_json(args_);
}

void Trainer::maybe_log_save_evaluate() {
  // All ranks reach the same decisions, so the token count's reduction runs on all of them.
  if (control_.should_log || control_.should_evaluate || control_.should_save)
    input_tokens_.add_pending_to(*strategy_, state_.num_input_tokens_seen);
  if (control_.should_log && state_.global_step > globalstep_last_logged_) {
    // The only host synchronisations of the loop happen here, at logging steps.
    const double tr_loss = strategy_->mean_across_processes(tr_loss_).item<double>();
    tr_loss_.zero_();
    nlohmann::json logs;
    logs["loss"] = tr_loss / static_cast<double>(state_.global_step - globalstep_last_logged_);
    if (grad_norm_.defined()) logs["grad_norm"] = grad_norm_.item<double>();
    logs["learning_rate"] = step_learning_rate_.value_or(learning_rate());
    total_loss_scalar_ += tr_loss;
    globalstep_last_logged_ = state_.global_step;
    if (input_tokens_.enabled()) {
      // transformers' log(logs, start_time): this session's tokens per second with the runtime.
      for (const auto& [key, value] :
           speed_metrics("train", train_start_, std::nullopt, std::nullopt,
                         static_cast<double>(state_.num_input_tokens_seen - initial_tokens_seen_)))
        logs[key] = value;
    }
    log(std::move(logs));
  }
  if (control_.should_evaluate) {
    auto timer = profiler_.measure(StepPhase::kEvaluation);
    Metrics metrics = evaluate();
    update_best_metric(metrics);
    if (args_.save_strategy == SaveStrategy::kBest) control_.should_save = is_new_best_;
  }
  if (control_.should_save) {
    auto timer = profiler_.measure(StepPhase::kCheckpoint);
    save_checkpoint();
  }
}

void Trainer::write_step_profile() const {
  logging::logger()->info("{}", profiler_.summary());
  if (!process_.is_world_process_zero()) return;
  nlohmann::json report = profiler_.report();
  report["rank"] = process_.rank;
  report["world_size"] = strategy_->world_size();
  report["device"] = device_.str();
  std::filesystem::create_directories(args_.output_dir);
  write_json_file(std::filesystem::path(args_.output_dir) / "profile.json", report);
}

}  // namespace ctrainer
