#include <ctrainer/models/sequence_classification_loss.h>

#include <torch/nn/functional/loss.h>

#include <ctrainer/core/errors.h>

namespace ctrainer {

at::Tensor sequence_classification_loss(const at::Tensor& logits, const at::Tensor& labels,
                                        std::optional<std::string>& problem_type) {
  namespace F = torch::nn::functional;
  const int64_t num_labels = logits.size(-1);
  if (!problem_type) {
    // HF mutates config.problem_type on the first labelled batch, and so it is saved.
    if (num_labels == 1) {
      problem_type = "regression";
    } else if (labels.scalar_type() == at::kLong || labels.scalar_type() == at::kInt) {
      problem_type = "single_label_classification";
    } else {
      problem_type = "multi_label_classification";
    }
  }
  if (*problem_type == "regression") {
    at::Tensor target = labels.to(logits.scalar_type());
    if (num_labels == 1) return F::mse_loss(logits.squeeze(), target.squeeze());
    return F::mse_loss(logits, target);
  }
  if (*problem_type == "single_label_classification") {
    if (labels.is_floating_point())
      throw ArgumentError(
          "labels must be integer class ids for single_label_classification, got a floating-point "
          "tensor (set problem_type to regression or multi_label_classification?)");
    return F::cross_entropy(logits.view({-1, num_labels}), labels.view({-1}).to(at::kLong));
  }
  // multi_label_classification
  if (labels.sizes() != logits.sizes())
    throw ArgumentError("multi_label_classification labels must be [batch, num_labels] = " +
                        std::to_string(logits.size(0)) + " x " + std::to_string(num_labels) +
                        " (0/1 per label)");
  return F::binary_cross_entropy_with_logits(logits, labels.to(logits.scalar_type()));
}

}  // namespace ctrainer
