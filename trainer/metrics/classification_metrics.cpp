#include <ctrainer/trainer/metrics/classification_metrics.h>

#include <cmath>
#include <map>
#include <string>

#include <ctrainer/core/errors.h>

namespace ctrainer::metrics {
namespace {

void check_sizes(const char* metric, size_t predictions, size_t labels) {
  if (predictions != labels)
    throw ArgumentError(std::string(metric) + ": " + std::to_string(predictions) +
                        " predictions but " + std::to_string(labels) + " labels");
  if (predictions == 0) throw ArgumentError(std::string(metric) + ": no predictions");
}

}  // namespace

double accuracy(const std::vector<int64_t>& predictions, const std::vector<int64_t>& labels) {
  check_sizes("accuracy", predictions.size(), labels.size());
  size_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) correct += predictions[i] == labels[i];
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

double f1_binary(const std::vector<int64_t>& predictions, const std::vector<int64_t>& labels,
                 int64_t positive_label) {
  check_sizes("f1", predictions.size(), labels.size());
  double tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const bool predicted = predictions[i] == positive_label;
    const bool actual = labels[i] == positive_label;
    tp += predicted && actual;
    fp += predicted && !actual;
    fn += !predicted && actual;
  }
  const double denominator = 2 * tp + fp + fn;
  return denominator == 0 ? 0.0 : 2 * tp / denominator;
}

double matthews_corrcoef(const std::vector<int64_t>& predictions,
                         const std::vector<int64_t>& labels) {
  check_sizes("matthews_correlation", predictions.size(), labels.size());
  // Per-class totals are all the multi-class formula needs: with t_k / p_k the true / predicted
  // counts of class k, c the correct count and s the sample count,
  // MCC = (c·s − Σ t_k p_k) / sqrt((s² − Σ p_k²)(s² − Σ t_k²)).
  std::map<int64_t, double> true_count, predicted_count;
  double correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    true_count[labels[i]] += 1;
    predicted_count[predictions[i]] += 1;
    correct += predictions[i] == labels[i];
  }
  const double samples = static_cast<double>(labels.size());
  double t_dot_p = 0, p_dot_p = 0, t_dot_t = 0;
  for (const auto& [label, t] : true_count) {
    t_dot_t += t * t;
    const auto p = predicted_count.find(label);
    if (p != predicted_count.end()) t_dot_p += t * p->second;
  }
  for (const auto& [label, p] : predicted_count) p_dot_p += p * p;
  const double cov_ytyp = correct * samples - t_dot_p;
  const double cov_ypyp = samples * samples - p_dot_p;
  const double cov_ytyt = samples * samples - t_dot_t;
  if (cov_ypyp * cov_ytyt == 0) return 0.0;
  return cov_ytyp / std::sqrt(cov_ytyt * cov_ypyp);
}

}  // namespace ctrainer::metrics
