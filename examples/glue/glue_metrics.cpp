#include <ctrainer/examples/glue/glue_metrics.h>

#include <numeric>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/metrics/classification_metrics.h>
#include <ctrainer/trainer/metrics/correlation_metrics.h>

namespace ctrainer::metrics {
namespace {

template <typename T>
std::vector<T> to_vector(const at::Tensor& tensor, at::ScalarType dtype) {
  const at::Tensor flat = tensor.detach().to(at::kCPU, dtype).contiguous().reshape({-1});
  const T* data = flat.data_ptr<T>();
  return std::vector<T>(data, data + flat.numel());
}

bool is_regression_task(const std::string& task, bool regression) {
  return task == "stsb" || (task.empty() && regression);
}

}  // namespace

std::vector<std::string> glue_metric_names(const std::string& task, bool regression) {
  if (task == "cola") return {"matthews_correlation"};
  if (task == "stsb") return {"pearson", "spearmanr"};
  if (task == "mrpc" || task == "qqp") return {"accuracy", "f1"};
  if (task == "sst2" || task == "mnli" || task == "mnli-mm" || task == "mnli_matched" ||
      task == "mnli_mismatched" || task == "qnli" || task == "rte" || task == "wnli")
    return {"accuracy"};
  if (task.empty()) return {regression ? "mse" : "accuracy"};
  throw ArgumentError("unknown GLUE task '" + task +
                      "'; use one of cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli");
}

std::map<std::string, double> glue_metrics(const std::string& task, const at::Tensor& predictions,
                                           const at::Tensor& labels, bool regression) {
  const std::vector<std::string> names = glue_metric_names(task, regression);
  std::map<std::string, double> result;
  if (is_regression_task(task, regression)) {
    if (predictions.numel() != labels.numel())
      throw ArgumentError("regression metrics need one score per example: got " +
                          std::to_string(predictions.numel()) + " scores for " +
                          std::to_string(labels.numel()) + " labels");
    const auto scores = to_vector<double>(predictions, at::kDouble);
    const auto targets = to_vector<double>(labels, at::kDouble);
    if (task.empty()) {
      double squared = 0;
      for (size_t i = 0; i < scores.size(); ++i)
        squared += (scores[i] - targets[i]) * (scores[i] - targets[i]);
      result["mse"] = squared / static_cast<double>(scores.size());
    } else {
      result["pearson"] = pearson(scores, targets);
      result["spearmanr"] = spearman(scores, targets);
    }
  } else {
    if (predictions.dim() != 2)
      throw ArgumentError("classification metrics need logits of shape [N, num_labels], got " +
                          std::to_string(predictions.dim()) + " dimensions");
    const auto predicted = to_vector<int64_t>(predictions.argmax(1), at::kLong);
    const auto targets = to_vector<int64_t>(labels, at::kLong);
    for (const auto& name : names) {
      if (name == "accuracy") result[name] = accuracy(predicted, targets);
      if (name == "f1") result[name] = f1_binary(predicted, targets);
      if (name == "matthews_correlation") result[name] = matthews_corrcoef(predicted, targets);
    }
  }
  if (result.size() > 1) {
    double sum = 0;
    for (const auto& [name, value] : result) sum += value;
    result["combined_score"] = sum / static_cast<double>(result.size());
  }
  return result;
}

}  // namespace ctrainer::metrics
