#pragma once
/// \file The GLUE metric of each task, as run_glue.py computes it with HF `evaluate`'s "glue"
/// metric: argmax of the logits (or the squeezed score for STS-B), the task's metrics, and
/// `combined_score` (their mean) when a task has more than one.
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace ctrainer::metrics {

/// Metric names of `task` in the order run_glue reports them, e.g. {"accuracy", "f1"} for
/// mrpc. An empty task (custom train/validation files) → {"accuracy"}, or {"mse"} when
/// `regression`. Throws ArgumentError for an unknown task name, listing the valid ones.
std::vector<std::string> glue_metric_names(const std::string& task, bool regression = false);

/// Metrics of `task` for logits `predictions` ([N, num_labels], or [N]/[N, 1] for regression)
/// against `labels` ([N]). Tasks: cola, sst2, mrpc, stsb, qqp, mnli (also mnli-mm,
/// mnli_matched, mnli_mismatched), qnli, rte, wnli, or "" for custom files (accuracy; mse when
/// `regression`).
std::map<std::string, double> glue_metrics(const std::string& task, const at::Tensor& predictions,
                                           const at::Tensor& labels, bool regression = false);

}  // namespace ctrainer::metrics
