#pragma once
/// \file Concatenating per-batch outputs of an evaluation into one tensor.
#include <vector>

#include <ATen/ATen.h>

namespace ctrainer {

/// Concatenates along dim 0. When the other dimensions differ (e.g. sequence lengths of
/// dynamically padded batches) every part is first padded with `padding_index` to the largest
/// size, as HF's nested_concat does. Empty input -> undefined tensor.
at::Tensor concat_padded(const std::vector<at::Tensor>& parts, double padding_index = -100);

}  // namespace ctrainer
