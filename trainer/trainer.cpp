#include <ctrainer/trainer/trainer.h>

#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>

#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <ctrainer/trainer/callbacks/default_flow_callback.h>
#include <ctrainer/trainer/callbacks/log_file_callback.h>
#include <ctrainer/trainer/callbacks/progress_callback.h>
#include <ctrainer/trainer/callbacks/report_to.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>
#include <ctrainer/trainer/core/errors.h>
#include <ctrainer/trainer/cpu_runtime.h>
#include <ctrainer/trainer/data/distributed_sampler.h>
#include <ctrainer/trainer/data/train_sampler.h>
#include <ctrainer/trainer/device.h>
#include <ctrainer/trainer/label_smoother.h>
#include <ctrainer/trainer/logging.h>
#include <ctrainer/trainer/metrics_report.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>
#include <ctrainer/trainer/optim/optimizer_factory.h>
#include <ctrainer/trainer/precision/autocast_scope.h>
#include <ctrainer/trainer/seed.h>
#include <ctrainer/trainer/signal_guard.h>
#include <ctrainer/trainer/speed_metrics.h>
#include <ctrainer/trainer/strategy_factory.h>

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
  warn_if_reference_blas();
  if (args_.full_determinism)
    enable_full_determinism(args_.seed);
  else
    set_seed(args_.seed);

  device_ = select_device(args_, process_.local_rank);
  precision_ = components_.precision ? components_.precision : Precision::from_args(args_, device_);
  if (precision_->device_type() != device_.type())
    throw ArgumentError("TrainerComponents::precision was made for " +
                        c10::DeviceTypeName(precision_->device_type(), true) +
                        " but the Trainer runs on " + device_.str());
  apply_tf32(args_.tf32, device_);
  // Before the strategy wraps the model: recomputation is a property of the model's layers.
  // Models without support refuse with an error naming the flag.
  if (args_.gradient_checkpointing) model_->gradient_checkpointing_enable();
  // One process: SingleDeviceStrategy. Several: the process group is joined here (collective),
  // every rank's arguments and model are checked against rank 0's, and DDPStrategy::setup
  // broadcasts rank 0's weights.
  TrainingStrategy training = create_training_strategy(args_, process_, device_, *model_);
  process_group_ = std::move(training.group);
  strategy_ = std::move(training.strategy);
  strategy_->setup(*model_, device_);

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

// ---- data ------------------------------------------------------------------------------------

std::shared_ptr<DataLoader> Trainer::get_train_dataloader() {
  if (!components_.train_dataset) throw ArgumentError("Trainer: training requires a train_dataset");
  auto& ds = components_.train_dataset;
  DataLoaderOptions opts{args_.per_device_train_batch_size, args_.dataloader_drop_last,
                         args_.dataloader_pin_memory && device_.is_cuda(),
                         args_.dataloader_num_workers,
                         args_.dataloader_prefetch_factor.value_or(2)};
  TrainSamplerOptions sampling{
      .seed = args_.sampler_seed(),
      .strategy = args_.train_sampling_strategy,
      .group_batch_size = args_.per_device_train_batch_size * args_.gradient_accumulation_steps,
      .num_replicas = strategy_->world_size(),
      .rank = process_.rank,
      .drop_last = args_.dataloader_drop_last};
  return std::make_shared<DataLoader>(ds, make_train_sampler(*ds, sampling), opts,
                                      components_.data_collator);
}

std::shared_ptr<DataLoader> Trainer::get_eval_dataloader(std::shared_ptr<Dataset> eval_dataset) {
  if (!eval_dataset) eval_dataset = components_.eval_dataset;
  if (!eval_dataset) throw ArgumentError("Trainer: evaluation requires an eval_dataset");
  DataLoaderOptions opts{args_.per_device_eval_batch_size, args_.dataloader_drop_last,
                         args_.dataloader_pin_memory && device_.is_cuda(),
                         args_.dataloader_num_workers,
                         args_.dataloader_prefetch_factor.value_or(2)};
  // Several processes: rank r evaluates rows r, r + W, ... (unpadded, so no example counts
  // twice), which evaluation_loop gathers back into dataset order. With drop_last, torch's
  // DistributedSampler cuts the tail to equal shares instead.
  std::shared_ptr<Sampler> sampler;
  if (strategy_->world_size() > 1 && args_.dataloader_drop_last)
    sampler = std::make_shared<DistributedSampler>(eval_dataset->size(), strategy_->world_size(),
                                                   process_.rank, /*shuffle=*/false,
                                                   /*seed=*/0, /*drop_last=*/true);
  else if (strategy_->world_size() > 1)
    sampler = std::make_shared<ShardedSequentialSampler>(eval_dataset->size(),
                                                         strategy_->world_size(), process_.rank);
  else
    sampler = std::make_shared<SequentialSampler>(eval_dataset->size());
  return std::make_shared<DataLoader>(eval_dataset, std::move(sampler), opts,
                                      components_.data_collator);
}

std::shared_ptr<DataLoader> Trainer::get_test_dataloader(std::shared_ptr<Dataset> test_dataset) {
  if (!test_dataset) throw ArgumentError("Trainer::predict needs a test_dataset");
  return get_eval_dataloader(std::move(test_dataset));
}

// ---- optimizer and scheduler -------------------------------------------------------------------

std::shared_ptr<torch::optim::Optimizer> Trainer::create_optimizer() {
  if (!optimizer_)
    optimizer_ =
        components_.optimizer ? components_.optimizer : ctrainer::create_optimizer(args_, *model_);
  return optimizer_;
}

std::shared_ptr<LRScheduler> Trainer::create_scheduler(
    int64_t num_training_steps, std::shared_ptr<torch::optim::Optimizer> optimizer) {
  if (!lr_scheduler_) {
    if (components_.lr_scheduler) {
      lr_scheduler_ = components_.lr_scheduler;
    } else {
      if (!optimizer) optimizer = optimizer_;
      lr_scheduler_ =
          get_scheduler(args_.lr_scheduler_type, optimizer,
                        get_warmup_steps(args_, num_training_steps), num_training_steps);
    }
  }
  return lr_scheduler_;
}

void Trainer::create_optimizer_and_scheduler(int64_t num_training_steps) {
  create_optimizer();
  create_scheduler(num_training_steps, optimizer_);
}

double Trainer::learning_rate() const {
  if (!lr_scheduler_) return args_.learning_rate;
  auto lrs = lr_scheduler_->get_last_lr();
  return lrs.empty() ? 0.0 : lrs.front();
}

// ---- one step ----------------------------------------------------------------------------------

LossAndOutputs Trainer::compute_loss(Model& model, const Batch& inputs, bool /*return_outputs*/,
                                     std::optional<int64_t> /*num_items_in_batch*/) {
  if (args_.label_smoothing_factor != 0 && inputs.contains("labels")) {
    Batch without_labels = inputs;
    without_labels.erase("labels");
    ModelOutput out = model.forward(without_labels);
    at::Tensor loss =
        label_smoothed_loss(out.logits, inputs.at("labels"), args_.label_smoothing_factor);
    return {loss, std::move(out)};
  }
  ModelOutput out = model.forward(inputs);
  if (!out.loss.defined()) {
    std::string keys;
    for (const auto& k : inputs.keys()) keys += (keys.empty() ? "" : ", ") + k;
    throw std::runtime_error("the model did not return a loss for a batch with keys [" + keys +
                             "]: make forward() compute it when labels are given, or override "
                             "Trainer::compute_loss");
  }
  at::Tensor loss = out.loss;
  return {loss, std::move(out)};
}

void Trainer::backward(const at::Tensor& loss) {
  strategy_->backward(precision_->scale_loss(loss), sync_gradients_);
}

at::Tensor Trainer::training_step(Model& model, const Batch& inputs,
                                  std::optional<int64_t> num_items_in_batch) {
  model.train();
  Batch on_device = inputs.to(device_);
  at::Tensor loss;
  {
    // Forward and loss in the mixed-precision dtype; backward outside (fp32 gradients).
    AutocastScope autocast(device_.type(), precision_->autocast_dtype());
    loss = compute_loss(model, on_device, false, num_items_in_batch).loss;
  }
  // compute_loss returns the batch mean; weighting it by the batch's share of the window makes
  // the summed gradient the mean over all of the window's examples, even for a short window.
  // A window of one batch has share 1: skip the multiply (one autograd node less per step).
  if (num_items_in_batch && *num_items_in_batch > 0 && *num_items_in_batch != on_device.size())
    loss =
        loss * (static_cast<double>(on_device.size()) / static_cast<double>(*num_items_in_batch));
  backward(loss);
  return loss.detach();
}

PredictionStepOutput Trainer::prediction_step(Model& model, const Batch& inputs,
                                              bool prediction_loss_only) {
  torch::NoGradGuard no_grad;
  Batch on_device = inputs.to(device_);
  if (model_eval_dtype_) {
    // The model was cast for full evaluation; ctrainer's models do not cast their float inputs
    // themselves (HF's mostly take integer ids), so float features follow the weights here.
    for (auto& [key, t] : on_device)
      if (t.is_floating_point()) t = t.to(*model_eval_dtype_);
  }
  AutocastScope autocast(device_.type(), precision_->autocast_dtype());
  const auto label_keys = args_.label_keys();
  bool has_labels = !label_keys.empty();
  for (const auto& k : label_keys) has_labels = has_labels && on_device.contains(k);

  PredictionStepOutput out;
  ModelOutput outputs;
  if (has_labels) {
    auto loss_and_outputs = compute_loss(model, on_device, true);
    out.loss = loss_and_outputs.loss.mean().detach();
    outputs = std::move(loss_and_outputs.outputs);
  } else {
    outputs = model.forward(on_device);
  }
  if (prediction_loss_only) return out;
  out.logits = outputs.logits.defined() ? outputs.logits.detach() : at::Tensor();
  // Autocast outputs come back in fp32 (accelerate's convert_outputs_to_fp32); a model cast for
  // full evaluation keeps its dtype, as in HF.
  if (out.logits.defined() && !model_eval_dtype_ && precision_->autocast_dtype() &&
      out.logits.scalar_type() == *precision_->autocast_dtype())
    out.logits = out.logits.to(at::kFloat);
  if (has_labels) {
    if (label_keys.size() == 1) {
      out.labels = on_device.at(label_keys.front());
    } else {
      std::vector<at::Tensor> parts;
      for (const auto& k : label_keys) parts.push_back(on_device.at(k));
      out.labels = at::stack(parts, 1);
    }
  }
  return out;
}

// ---- logging -----------------------------------------------------------------------------------

void Trainer::log(nlohmann::json logs) {
  if (state_.epoch) logs["epoch"] = *state_.epoch;
  nlohmann::json entry = logs;
  entry["step"] = state_.global_step;
  state_.log_history.push_back(entry);
  control_.should_log = false;  // HF's CallbackHandler.on_log, before the callbacks see it
  fire(&TrainerCallback::on_log, nullptr, &logs);
}

void Trainer::write_training_args() const {
  if (!process_.is_world_process_zero()) return;
  std::filesystem::create_directories(args_.output_dir);
  const auto path = std::filesystem::path(args_.output_dir) / "training_args.json";
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path.string() + ": check --output_dir");
  out << to_json(args_).dump(2) << '\n';
}

void Trainer::maybe_log_save_evaluate() {
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
    log(std::move(logs));
  }
  if (control_.should_evaluate) {
    Metrics metrics = evaluate();
    update_best_metric(metrics);
    if (args_.save_strategy == SaveStrategy::kBest) control_.should_save = is_new_best_;
  }
  if (control_.should_save) save_checkpoint();
}

void Trainer::update_best_metric(const Metrics& metrics) {
  if (!args_.metric_for_best_model) return;
  std::string key = *args_.metric_for_best_model;
  if (key.rfind("eval_", 0) != 0) key = "eval_" + key;
  auto it = metrics.find(key);
  if (it == metrics.end()) {
    std::string present;
    for (const auto& [k, v] : metrics) present += (present.empty() ? "" : ", ") + k;
    throw ArgumentError("--metric_for_best_model " + *args_.metric_for_best_model +
                        ": the metric " + key +
                        " was not produced by evaluation (available: " + present + ")");
  }
  const bool greater = args_.greater_is_better.value_or(false);
  if (!state_.best_metric ||
      (greater ? it->second > *state_.best_metric : it->second < *state_.best_metric)) {
    state_.best_metric = it->second;
    state_.best_global_step = state_.global_step;
    is_new_best_ = true;
  }
}

// ---- training loop -----------------------------------------------------------------------------

void Trainer::exit_on_signal(int signal) {
  train_batches_.reset();  // stop and join the loader's workers before std::exit
  const std::string name = signal == SIGTERM  ? "SIGTERM"
                           : signal == SIGINT ? "SIGINT"
                                              : std::to_string(signal);
  // The step that was running when the signal came has finished; checkpoint it unless the
  // regular schedule just did.
  const auto folder = checkpoint_path(args_.output_dir, state_.global_step);
  const bool saved = std::filesystem::exists(folder) && !verify_checkpoint(folder);
  const std::string where = saved ? folder.string() : save_checkpoint();
  logging::logger()->warn(
      "received {} at step {}: checkpoint {} written; exiting with code {}. "
      "Resume with --resume_from_checkpoint latest.",
      name, state_.global_step, where, SignalGuard::exit_code(signal));
  logging::logger()->flush();
  std::fflush(stdout);
  std::fflush(stderr);
  std::exit(SignalGuard::exit_code(signal));
}

int Trainer::agreed_pending_signal() {
  const int local = SignalGuard::pending();
  if (strategy_->world_size() == 1) return local;
  // A signal reaches the ranks at slightly different moments; they must still stop after the
  // same step, because the checkpoint they write on the way out is collective.
  const at::Tensor flag = at::full({1}, local != 0 ? 1.0f : 0.0f,
                                   at::TensorOptions().device(device_).dtype(at::kFloat));
  if (strategy_->any_across_processes(flag).item<float>() == 0.0f) return 0;
  return local != 0 ? local : SIGTERM;
}

bool Trainer::unscale_gradients_and_check_overflow() {
  GradScaler* scaler = precision_->grad_scaler();
  if (!scaler) return false;
  // After the strategy reduced the gradients; the flag is then agreed on by every process.
  const at::Tensor found_inf =
      strategy_->any_across_processes(scaler->unscale_(model_->parameters()));
  const bool overflow = found_inf.item<float>() != 0.0f;  // one host sync, as GradScaler.step
  const double scale = overflow ? scaler->get_scale() : 0.0;
  scaler->update(found_inf);
  if (overflow)
    logging::logger()->info(
        "step {}: gradients overflowed (inf/NaN) at loss scale {}; optimizer and scheduler step "
        "skipped, loss scale now {}",
        state_.global_step + 1, scale, scaler->get_scale());
  return overflow;
}

TrainOutput Trainer::train() {
  const auto start = std::chrono::steady_clock::now();
  in_train_ = true;
  struct ResetInTrain {
    bool& flag;
    ~ResetInTrain() { flag = false; }
  } reset_in_train{in_train_};
  train_dataloader_ = get_train_dataloader();
  DataLoader& loader = *train_dataloader_;
  const int64_t len_dataloader = loader.num_batches();
  if (len_dataloader == 0)
    throw ArgumentError("the train dataset yields no batch (" +
                        std::to_string(loader.dataset().size()) +
                        " examples, --per_device_train_batch_size " +
                        std::to_string(args_.per_device_train_batch_size) +
                        (args_.dataloader_drop_last ? ", --dataloader_drop_last" : "") + ")");
  // Every rank must see the same dataset: the samplers shard one order, and a rank with more
  // batches would wait forever in a collective the others never start.
  require_same_on_every_rank(*strategy_, "the train dataset",
                             {std::to_string(loader.dataset().size()) + " examples, " +
                              std::to_string(len_dataloader) + " batches per epoch"},
                             "every rank must load the same train dataset");
  const int64_t ga = args_.gradient_accumulation_steps;
  // A short last window still makes an optimizer step, so an epoch has ceil(batches / ga) updates.
  const int64_t updates_per_epoch = std::max<int64_t>(ceil_div(len_dataloader, ga), 1);
  int64_t max_steps = 0;
  int64_t num_train_epochs = 0;
  double num_train_samples = 0;
  const int64_t total_train_batch_size =
      args_.per_device_train_batch_size * ga * strategy_->world_size();
  if (args_.max_steps > 0) {
    max_steps = args_.max_steps;
    num_train_epochs = ceil_div(max_steps, updates_per_epoch);
    num_train_samples = static_cast<double>(max_steps * total_train_batch_size);
  } else {
    max_steps = static_cast<int64_t>(std::ceil(args_.num_train_epochs * updates_per_epoch));
    num_train_epochs = static_cast<int64_t>(std::ceil(args_.num_train_epochs));
    num_train_samples = static_cast<double>(loader.dataset().size()) * args_.num_train_epochs;
  }

  state_ = TrainerState();
  state_.is_local_process_zero = process_.is_local_process_zero();
  state_.is_world_process_zero = process_.is_world_process_zero();
  state_.max_steps = max_steps;
  state_.num_train_epochs = num_train_epochs;
  state_.train_batch_size = args_.per_device_train_batch_size;
  state_.logging_steps = resolve_interval(args_.logging_steps, max_steps);
  // Unset eval_steps (no steps evaluation) keeps TrainerState's 500, as HF's compute_steps.
  if (args_.eval_steps) state_.eval_steps = resolve_interval(*args_.eval_steps, max_steps);
  state_.save_steps = resolve_interval(args_.save_steps, max_steps);
  // HF records the control's state from the start; checkpoints update it (save_checkpoint).
  state_.stateful_callbacks["TrainerControl"] = control_.state();

  create_optimizer_and_scheduler(max_steps);
  write_training_args();

  auto log = logging::logger();
  log->info("***** Running training *****");
  log->info("  Num examples = {}", loader.dataset().size());
  log->info("  Num Epochs = {}", num_train_epochs);
  log->info("  Instantaneous batch size per device = {}", args_.per_device_train_batch_size);
  log->info("  Total train batch size (w. parallel, distributed & accumulation) = {}",
            total_train_batch_size);
  log->info("  Gradient Accumulation steps = {}", ga);
  log->info("  Total optimization steps = {}", max_steps);
  int64_t trainable = 0;
  for (const auto& p : model_->parameters())
    if (p.requires_grad()) trainable += p.numel();
  log->info("  Number of trainable parameters = {}", trainable);
  log->info("  Precision = {}", precision_->describe());

  tr_loss_ = at::zeros({}, at::TensorOptions().device(device_).dtype(at::kFloat));
  grad_norm_ = at::Tensor();
  total_loss_scalar_ = 0;
  globalstep_last_logged_ = 0;
  is_new_best_ = false;
  state_.epoch = 0.0;
  const std::optional<std::string> resume = resolve_resume_checkpoint();
  DataPosition resume_at;
  if (resume) resume_at = load_checkpoint(*resume, len_dataloader);
  position_ = resume_at;
  strategy_->zero_grad(*model_);
  control_.new_training();
  fire(&TrainerCallback::on_train_begin);
  // Last, so that nothing between the checkpoint's capture and the first step draws numbers.
  if (resume) restore_rng(*resume);
  std::optional<SignalGuard> signals;
  if (args_.save_on_signal) signals.emplace();

  for (int64_t epoch = resume_at.epoch; epoch < num_train_epochs && state_.global_step < max_steps;
       ++epoch) {
    loader.set_epoch(epoch);
    const int64_t steps_in_epoch = len_dataloader;
    control_.new_epoch();
    fire(&TrainerCallback::on_epoch_begin);
    step_learning_rate_.reset();  // HF: per epoch, so an epoch without a step logs the current lr
    const int64_t total_updates = ceil_div(steps_in_epoch, ga);
    // A resumed epoch starts at the next unseen batch: batches are fetched by index, so the
    // skipped ones are never materialised.
    const int64_t first_update = epoch == resume_at.epoch ? resume_at.batches_consumed / ga : 0;
    int64_t step = first_update * ga - 1;
    // Workers build the epoch's remaining batches ahead, in index order.
    train_batches_ = std::make_unique<BatchStream>(loader, first_update * ga, steps_in_epoch);
    for (int64_t update = first_update;
         update < total_updates && !control_.should_epoch_stop && !control_.should_training_stop;
         ++update) {
      // The whole window is fetched first (HF's get_batch_samples) so that each micro-batch's
      // loss can be weighted by its share of the window's examples.
      const int64_t first = update * ga;
      const int64_t window_size = std::min(ga, steps_in_epoch - first);
      std::vector<Batch> window;
      int64_t window_items = 0;
      for (int64_t i = 0; i < window_size; ++i) {
        window.push_back(train_batches_->next());
        window_items += window.back().size();
      }
      for (int64_t i = 0; i < window_size; ++i) {
        ++step;
        position_ = {epoch, step + 1};
        sync_gradients_ = (i == window_size - 1);
        if (i == 0) {
          control_.new_step();
          fire(&TrainerCallback::on_step_begin);
        }
        at::Tensor loss_step = training_step(*model_, window[static_cast<size_t>(i)], window_items);
        tr_loss_.add_(loss_step.to(tr_loss_.scalar_type()));
        state_.total_flos += model_->floating_point_ops(window[static_cast<size_t>(i)]);
        if (sync_gradients_) {
          // Unscaled before clipping, so grad_norm and clipping see the true gradients. On an
          // overflow HF skips the optimizer step (GradScaler.step) and then the scheduler step
          // (optimizer_step_was_skipped); global_step still advances.
          const bool skip_step = unscale_gradients_and_check_overflow();
          // max_grad_norm 0 only measures the norm: transformers 5 logs grad_norm either way.
          grad_norm_ = strategy_->clip_grad_norm(*model_, args_.max_grad_norm);
          fire(&TrainerCallback::on_pre_optimizer_step);
          if (!skip_step) strategy_->optimizer_step(*optimizer_);
          fire(&TrainerCallback::on_optimizer_step);
          // transformers 5 logs the learning rate this step used, read before the scheduler
          // moves on (transformers 4 logged the next step's).
          step_learning_rate_ = learning_rate();
          if (!skip_step) lr_scheduler_->step();
          strategy_->zero_grad(*model_);
          state_.global_step += 1;
          state_.epoch = static_cast<double>(epoch) +
                         static_cast<double>(step + 1) / static_cast<double>(steps_in_epoch);
          fire(&TrainerCallback::on_step_end);
          maybe_log_save_evaluate();
          if (signals)
            if (const int signal = agreed_pending_signal(); signal != 0) exit_on_signal(signal);
        } else {
          fire(&TrainerCallback::on_substep_end);
        }
        if (control_.should_epoch_stop || control_.should_training_stop) break;
      }
    }
    train_batches_.reset();  // stops prefetching when the epoch ends early
    if (!control_.should_training_stop) position_ = {epoch, steps_in_epoch};
    fire(&TrainerCallback::on_epoch_end);
    maybe_log_save_evaluate();
    if (control_.should_training_stop) break;
  }
  if (args_.load_best_model_at_end) load_best_model();

  // Loss of steps after the last logging step still counts towards the mean training loss.
  total_loss_scalar_ += strategy_->mean_across_processes(tr_loss_).item<double>();
  tr_loss_.zero_();
  const double train_loss =
      total_loss_scalar_ / std::max<double>(static_cast<double>(state_.global_step), 0.001);
  Metrics metrics =
      speed_metrics("train", start, num_train_samples, static_cast<double>(max_steps));
  metrics["total_flos"] = state_.total_flos;
  metrics["train_loss"] = train_loss;
  this->log(metrics_to_json(metrics));
  if (state_.epoch) metrics["epoch"] = *state_.epoch;
  fire(&TrainerCallback::on_train_end);
  return TrainOutput{state_.global_step, train_loss, metrics};
}

}  // namespace ctrainer
