#include <ctrainer/trainer/loss/label_smoother.h>

#include <ctrainer/core/errors.h>

namespace ctrainer {

at::Tensor label_smoothed_loss(const at::Tensor& logits, const at::Tensor& labels, double epsilon,
                               int64_t ignore_index, std::optional<int64_t> num_items_in_batch) {
  if (at::isFloatingType(labels.scalar_type()))
    throw ArgumentError(
        "--label_smoothing_factor needs integer class labels, but the labels are floating point "
        "(a regression task); set --label_smoothing_factor 0");
  at::Tensor log_probs = -at::log_softmax(logits, -1);
  at::Tensor target = labels;
  if (target.dim() == log_probs.dim() - 1) target = target.unsqueeze(-1);
  at::Tensor padding = target.eq(ignore_index);
  // Padded positions gather index 0 (any valid class) and are zeroed just after.
  at::Tensor safe_target = target.clamp_min(0);
  at::Tensor nll = log_probs.gather(-1, safe_target).masked_fill(padding, 0.0);
  // In fp32 whatever the logits' dtype (HF sums with dtype=torch.float32).
  at::Tensor smoothed = log_probs.sum(-1, /*keepdim=*/true, at::kFloat).masked_fill(padding, 0.0);
  at::Tensor num_active = num_items_in_batch ? at::scalar_tensor(*num_items_in_batch,
                                                                 padding.options().dtype(at::kLong))
                                             : padding.numel() - padding.sum();
  nll = nll.sum() / num_active;
  smoothed = smoothed.sum() / (num_active * log_probs.size(-1));
  return (1.0 - epsilon) * nll + epsilon * smoothed;
}

}  // namespace ctrainer
