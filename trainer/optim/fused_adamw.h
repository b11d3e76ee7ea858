#pragma once
/// \file AdamW with one fused kernel per parameter list (torch's `_fused_adamw_`): what HF's
/// `--optim adamw_torch_fused` (its default since torch 2.8) runs, torch.optim.AdamW(fused=True).
#include <torch/optim/adamw.h>

namespace ctrainer {

/// torch::optim::AdamW whose step() updates every parameter of a group in one pass of the fused
/// ATen kernel (CPU kernel since torch 2.4, CUDA since 2.0) instead of the ~20 elementwise passes
/// of the reference implementation: the update reads each parameter, gradient and moment once
/// and is multi-threaded. Same math (decoupled weight decay, bias correction, amsgrad) as
/// torch::optim::AdamW up to float rounding; the options, the per-parameter state
/// (AdamWParamState: integer step, exp_avg, exp_avg_sq, max_exp_avg_sq) and the serialised form
/// are AdamW's, so checkpoints move freely between the two and code that inspects an AdamW sees
/// one.
class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  /// One optimizer step. Throws c10::Error for a sparse gradient (as AdamW does).
  at::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace ctrainer
