#pragma once
/// \file Label smoothing of a classification loss (HF's LabelSmoother).
#include <ATen/ATen.h>

namespace ctrainer {

/// (1 - epsilon) * NLL + epsilon * mean over classes of -log p, averaged over the labels that are
/// not `ignore_index`; logits [..., C], integer labels [...]. Equals HF's LabelSmoother.
at::Tensor label_smoothed_loss(const at::Tensor& logits, const at::Tensor& labels, double epsilon,
                               int64_t ignore_index = -100);

}  // namespace ctrainer
