// Trainer's overridable hooks for one batch: the data loaders, the optimizer and scheduler, the
// loss, and the training and prediction steps (the loop that calls them is in trainer.cpp).
#include <ctrainer/trainer/trainer.h>

#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/data/distributed_sampler.h>
#include <ctrainer/trainer/data/train_sampler.h>
#include <ctrainer/trainer/loss/label_smoother.h>
#include <ctrainer/trainer/optim/deepspeed_optimizers.h>
#include <ctrainer/trainer/optim/deepspeed_schedulers.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>
#include <ctrainer/trainer/optim/optimizer_factory.h>
#include <ctrainer/trainer/precision/autocast_scope.h>

namespace ctrainer {

// ---- data ------------------------------------------------------------------------------------

DataLoaderOptions Trainer::dataloader_options(int64_t batch_size) const {
  return {batch_size, args_.dataloader_drop_last, args_.dataloader_pin_memory && device_.is_cuda(),
          args_.dataloader_num_workers, args_.dataloader_prefetch_factor.value_or(2)};
}

std::shared_ptr<DataLoader> Trainer::get_train_dataloader() {
  if (!components_.train_dataset) throw ArgumentError("Trainer: training requires a train_dataset");
  auto& ds = components_.train_dataset;
  const DataLoaderOptions opts = dataloader_options(args_.per_device_train_batch_size);
  return std::make_shared<DataLoader>(ds, make_train_sampler(*ds, train_sampler_options()), opts,
                                      components_.data_collator);
}

TrainSamplerOptions Trainer::train_sampler_options() const {
  return {.seed = args_.sampler_seed(),
          .strategy = args_.train_sampling_strategy,
          .group_batch_size = args_.per_device_train_batch_size * args_.gradient_accumulation_steps,
          .num_replicas = strategy_->world_size(),
          .rank = process_.rank,
          .drop_last = args_.dataloader_drop_last,
          .per_device_batch_size = args_.per_device_train_batch_size};
}

std::shared_ptr<DataLoader> Trainer::get_eval_dataloader(std::shared_ptr<Dataset> eval_dataset) {
  if (!eval_dataset) eval_dataset = components_.eval_dataset;
  if (!eval_dataset) throw ArgumentError("Trainer: evaluation requires an eval_dataset");
  const DataLoaderOptions opts = dataloader_options(args_.per_device_eval_batch_size);
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
      lr_scheduler_ = get_scheduler(args_.lr_scheduler_type, optimizer,
                                    get_warmup_steps(args_, num_training_steps), num_training_steps,
                                    args_.lr_scheduler_kwargs
                                        ? nlohmann::json::parse(args_.lr_scheduler_kwargs->text)
                                        : nlohmann::json());
    }
  }
  return lr_scheduler_;
}

void Trainer::create_optimizer_and_scheduler(int64_t num_training_steps) {
  // transformers lets a DeepSpeed config's optimizer and scheduler sections replace --optim and
  // --lr_scheduler_type in every combination (deepspeed_optim_sched).
  const auto& ds = sharding_.deepspeed_settings;
  // The sections' errors name their JSON path; the file is added here.
  const auto in_config = [&](const ArgumentError& error) {
    return ArgumentError("--deepspeed " + args_.deepspeed.value_or("config") + ": " + error.what());
  };
  try {
    if (ds && ds->optimizer && !optimizer_ && !components_.optimizer)
      optimizer_ = create_deepspeed_optimizer(ds->optimizer->type, ds->optimizer->params, *model_);
  } catch (const ArgumentError& error) {
    throw in_config(error);
  }
  create_optimizer();
  try {
    if (ds && ds->scheduler && !lr_scheduler_ && !components_.lr_scheduler)
      lr_scheduler_ =
          create_deepspeed_scheduler(ds->scheduler->type, ds->scheduler->params, optimizer_);
  } catch (const ArgumentError& error) {
    throw in_config(error);
  }
  create_scheduler(num_training_steps, optimizer_);
}

double Trainer::learning_rate() const {
  if (!lr_scheduler_) return args_.learning_rate;
  auto lrs = lr_scheduler_->get_last_lr();
  return lrs.empty() ? 0.0 : lrs.front();
}

// ---- one step ----------------------------------------------------------------------------------

LossAndOutputs Trainer::compute_loss(Model& model, const Batch& inputs, bool /*return_outputs*/,
                                     std::optional<int64_t> num_items_in_batch) {
  const bool token_level = num_items_in_batch && model.accepts_loss_kwargs();
  ModelOutput out;
  at::Tensor loss;
  if (args_.label_smoothing_factor != 0 && inputs.contains("labels")) {
    // HF's LabelSmoother on the model's logits; a causal LM's labels are shifted as transformers
    // shifts them for the causal-LM mapping's models, and its token-level loss divides by the
    // window's label tokens (num_items_in_batch) instead of this batch's.
    Batch without_labels = inputs;
    without_labels.erase("labels");
    out = model.forward(without_labels);
    at::Tensor logits = out.logits, labels = inputs.at("labels");
    if (model.loss_shifts_labels()) {
      logits = logits.slice(-2, 0, -1);
      labels = labels.slice(-1, 1);
    }
    loss = label_smoothed_loss(logits, labels, args_.label_smoothing_factor, -100,
                               token_level ? num_items_in_batch : std::nullopt);
  } else {
    out = token_level ? model.forward_with_num_items(inputs, *num_items_in_batch)
                      : model.forward(inputs);
    if (!out.loss.defined()) {
      std::string keys;
      for (const auto& k : inputs.keys()) keys += (keys.empty() ? "" : ", ") + k;
      throw std::runtime_error("the model did not return a loss for a batch with keys [" + keys +
                               "]: make forward() compute it when labels are given, or override "
                               "Trainer::compute_loss");
    }
    loss = out.loss;
  }
  // The count covers every rank while each rank's gradients are averaged over the ranks:
  // scaling by the world size makes the step's gradient the mean over all ranks' tokens.
  if (token_level && args_.average_tokens_across_devices && strategy_->world_size() > 1)
    loss = loss * static_cast<double>(strategy_->world_size());
  return {loss, std::move(out)};
}

void Trainer::backward(const at::Tensor& loss) {
  strategy_->backward(precision_->scale_loss(loss), sync_gradients_);
}

at::Tensor Trainer::training_step(Model& model, const Batch& inputs,
                                  std::optional<int64_t> num_items_in_batch) {
  model.train();
  at::Tensor loss;
  int64_t batch_size = 0;
  {
    auto timer = profiler_.measure(StepPhase::kForward);
    const Batch on_device = inputs.to(device_);
    batch_size = on_device.size();
    // Forward and loss in the mixed-precision dtype; backward outside (fp32 gradients).
    AutocastScope autocast(device_.type(), precision_->autocast_dtype());
    before_forward(model);  // ZeRO-3: gathers the parameters outside the wrapped units
    loss = compute_loss(model, on_device, false, num_items_in_batch).loss;
  }
  // compute_loss returns the batch mean; weighting it by the batch's share of the window makes
  // the summed gradient the mean over all of the window's examples, even for a short window.
  // A window of one batch has share 1: skip the multiply (one autograd node less per step).
  // A token-level loss was already divided by the window's label tokens (count_loss_items).
  const bool token_level = model.accepts_loss_kwargs() && inputs.contains("labels");
  if (!token_level && num_items_in_batch && *num_items_in_batch > 0 &&
      *num_items_in_batch != batch_size)
    loss = loss * (static_cast<double>(batch_size) / static_cast<double>(*num_items_in_batch));
  {
    auto timer = profiler_.measure(StepPhase::kBackward);
    backward(loss);
  }
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
  before_forward(model);
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

}  // namespace ctrainer
