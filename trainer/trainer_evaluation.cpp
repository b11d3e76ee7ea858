// Trainer::evaluate / predict, the evaluation loop they share (HF's evaluation_loop), and the
// best-metric tracking of load_best_model_at_end.
#include <algorithm>
#include <cmath>

#include <torch/utils.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/evaluation/eval_gather.h>
#include <ctrainer/trainer/evaluation/metrics_report.h>
#include <ctrainer/trainer/evaluation/tensor_concat.h>
#include <ctrainer/trainer/runtime/cpu_runtime.h>
#include <ctrainer/trainer/runtime/speed_metrics.h>
#include <ctrainer/trainer/runtime/strategy_factory.h>
#include <ctrainer/trainer/trainer.h>

#include <algorithm>

namespace ctrainer {

Trainer::EvalLoopOutput Trainer::evaluation_loop(DataLoader& loader, bool prediction_loss_only,
                                                 const std::string& prefix) {
  require_same_on_every_rank(*strategy_, "the evaluation dataset",
                             {std::to_string(loader.dataset().size()) + " examples"},
                             "every rank must evaluate the same dataset");
  model_->eval();
  if (!in_train_) cast_model_for_full_eval();
  release_freed_memory();  // the training step's freed buffers would not fit these (cpu_runtime.h)
  std::vector<at::Tensor> losses, preds, labels;  // on the device, not yet moved
  std::vector<at::Tensor> host_losses, host_preds, host_labels;
  auto flush_to_host = [&] {
    // HF's eval_accumulation_steps: bound device memory by moving outputs to the host.
    if (!losses.empty()) host_losses.push_back(at::cat(losses).cpu());
    if (!preds.empty()) host_preds.push_back(concat_padded(preds).cpu());
    if (!labels.empty()) host_labels.push_back(concat_padded(labels).cpu());
    losses.clear();
    preds.clear();
    labels.clear();
  };
  const int64_t n = loader.num_batches();
  // Shares differ by up to one batch, and ZeRO-3's forward gathers parameters: a rank with fewer
  // batches joins the collectives of the others' remaining forwards (counts exchanged first, as
  // a rank still computing its last forward cannot answer).
  int64_t most_batches = n;
  if (strategy_->forward_has_collectives() && strategy_->world_size() > 1)
    for (const auto& count : strategy_->all_gather_strings(std::to_string(n)))
      most_batches = std::max<int64_t>(most_batches, std::stoll(count));
  BatchStream batches(loader, 0, n);  // prefetched by the loader's workers, in order
  for (int64_t i = 0; i < n; ++i) {
    Batch inputs = batches.next();
    const int64_t batch_size = inputs.size();
    PredictionStepOutput out = prediction_step(*model_, inputs, prediction_loss_only);
    // Batch losses are repeated per example so eval_loss is the mean over examples.
    if (out.loss.defined())
      losses.push_back(out.loss.reshape({1}).expand({batch_size}).to(at::kFloat));
    if (out.logits.defined()) preds.push_back(out.logits);
    if (out.labels.defined()) labels.push_back(out.labels);
    fire(&TrainerCallback::on_prediction_step);
    if (args_.eval_accumulation_steps && (i + 1) % *args_.eval_accumulation_steps == 0)
      flush_to_host();
  }
  flush_to_host();
  for (int64_t i = n; i < most_batches; ++i) strategy_->forward_without_data(*model_);

  EvalLoopOutput out;
  // With several processes each rank evaluated its share; metrics see the whole dataset, in
  // order, each example once, on every rank.
  const int64_t dataset_size = loader.dataset().size();
  out.predictions = gather_in_dataset_order(*strategy_, concat_padded(host_preds), dataset_size);
  out.label_ids = gather_in_dataset_order(*strategy_, concat_padded(host_labels), dataset_size);
  const at::Tensor example_losses = gather_in_dataset_order(
      *strategy_, host_losses.empty() ? at::Tensor() : at::cat(host_losses), dataset_size);
  // Examples evaluated by all ranks: the whole dataset, unless drop_last cut equal shares.
  const int64_t world = strategy_->world_size();
  out.num_samples =
      world == 1 || args_.dataloader_drop_last ? loader.sampler().size() * world : dataset_size;
  if (components_.compute_metrics && out.predictions.defined() && out.label_ids.defined())
    out.metrics = components_.compute_metrics(EvalPrediction{out.predictions, out.label_ids});
  if (example_losses.defined()) out.metrics["loss"] = example_losses.mean().item<double>();
  Metrics prefixed;
  for (const auto& [k, v] : out.metrics)
    prefixed[k.rfind(prefix + "_", 0) == 0 ? k : prefix + "_" + k] = v;
  out.metrics = std::move(prefixed);
  return out;
}

void Trainer::cast_model_for_full_eval() {
  // HF evaluation_loop: `if not self.is_in_train: model = model.to(dtype=...)` (permanent).
  const auto dtype = precision_->full_eval_dtype();
  if (!dtype || model_eval_dtype_ == dtype) return;
  model_->to(*dtype);
  model_eval_dtype_ = dtype;
}

Metrics Trainer::evaluate(std::shared_ptr<Dataset> eval_dataset,
                          const std::string& metric_key_prefix) {
  auto loader = get_eval_dataloader(std::move(eval_dataset));
  eval_dataloader_ = loader;  // callbacks see it from the first on_prediction_step on
  const auto start = std::chrono::steady_clock::now();
  const bool loss_only = !components_.compute_metrics;
  EvalLoopOutput output = evaluation_loop(*loader, loss_only, metric_key_prefix);
  const double batch =
      static_cast<double>(args_.per_device_eval_batch_size * strategy_->world_size());
  Metrics speed = speed_metrics(metric_key_prefix, start, static_cast<double>(output.num_samples),
                                std::ceil(static_cast<double>(output.num_samples) / batch));
  output.metrics.insert(speed.begin(), speed.end());
  log(metrics_to_json(output.metrics));
  control_.should_evaluate = false;
  fire(&TrainerCallback::on_evaluate, &output.metrics);
  return output.metrics;
}

PredictionOutput Trainer::predict(std::shared_ptr<Dataset> test_dataset,
                                  const std::string& metric_key_prefix) {
  auto loader = get_test_dataloader(std::move(test_dataset));
  eval_dataloader_ = loader;  // as HF's evaluation_loop, also for predict()
  const auto start = std::chrono::steady_clock::now();
  EvalLoopOutput output =
      evaluation_loop(*loader, /*prediction_loss_only=*/false, metric_key_prefix);
  const double batch =
      static_cast<double>(args_.per_device_eval_batch_size * strategy_->world_size());
  Metrics speed = speed_metrics(metric_key_prefix, start, static_cast<double>(output.num_samples),
                                std::ceil(static_cast<double>(output.num_samples) / batch));
  output.metrics.insert(speed.begin(), speed.end());
  fire(&TrainerCallback::on_predict, &output.metrics);
  return PredictionOutput{output.predictions, output.label_ids, output.metrics};
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

}  // namespace ctrainer
