#pragma once
/// \file Label smoothing of a classification loss (HF's LabelSmoother).
#include <cstdint>
#include <optional>

#include <ATen/ATen.h>

namespace ctrainer {

/// (1 - epsilon) * NLL + epsilon * mean over classes of -log p, summed over the labels that are
/// not `ignore_index` and divided by their count, or by `num_items_in_batch` when given (the
/// label tokens of the whole accumulation window, and of every rank, for a token-level loss);
/// logits [..., C], integer labels [...]. Equals HF's LabelSmoother; a causal LM's caller shifts
/// first (logits[..., :-1, :], labels[..., 1:]), as its shift_labels=True does.
at::Tensor label_smoothed_loss(const at::Tensor& logits, const at::Tensor& labels, double epsilon,
                               int64_t ignore_index = -100,
                               std::optional<int64_t> num_items_in_batch = std::nullopt);

}  // namespace ctrainer
