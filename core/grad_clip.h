#pragma once
/// \file Global gradient-norm clipping without host synchronisation.
#include <vector>

#include <ATen/ATen.h>

namespace ctrainer {

/// torch.nn.utils.clip_grad_norm_ with norm_type=2 and error_if_nonfinite=False:
/// total_norm = L2 norm of all defined gradients (the L2 norm of the per-gradient L2 norms);
/// when max_norm > 0 every gradient is multiplied in place by
/// min(1, max_norm / (total_norm + 1e-6)). Parameters without a gradient are skipped.
///
/// Unlike torch::nn::utils::clip_grad_norm_ (which returns a double), nothing here reads a value
/// back to the host: the returned 0-dim tensor lives on the first gradient's device, so the
/// caller decides when to pay for `.item()` (e.g. only on logging steps).
///
/// The norms are accumulated in float32, or float64 when any gradient is float64 (half/bfloat16
/// gradients are not summed in their own precision, which overflows/rounds easily). max_norm
/// <= 0 computes the norm without clipping. With no gradient at all the result is a float32
/// zero on the CPU. A non-finite norm propagates into the gradients, as in torch.
at::Tensor clip_grad_norm_(const std::vector<at::Tensor>& parameters, double max_norm);

}  // namespace ctrainer
