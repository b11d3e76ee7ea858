#include <ctrainer/core/grad_clip.h>

#include <algorithm>

#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_foreach_norm.h>

namespace ctrainer {
namespace {

// L2 norm of one gradient accumulated in `acc`. A sparse gradient (Embedding(sparse=true)) is
// coalesced first so duplicate indices are summed before squaring, as its dense form would be.
at::Tensor grad_norm(const at::Tensor& g, at::ScalarType acc) {
  const at::Tensor values = g.is_sparse() ? g.coalesce().values() : g;
  return at::linalg_vector_norm(values, 2, c10::nullopt, /*keepdim=*/false, acc);
}

/// Every gradient dense and on the same CUDA device: the multi-tensor (foreach) kernels apply.
bool on_one_gpu_dense(const std::vector<at::Tensor>& grads) {
  const at::Device device = grads.front().device();
  if (!device.is_cuda()) return false;
  return std::all_of(grads.begin(), grads.end(),
                     [&](const at::Tensor& g) { return !g.is_sparse() && g.device() == device; });
}

}  // namespace

at::Tensor clip_grad_norm_(const std::vector<at::Tensor>& parameters, double max_norm) {
  // The update is not part of any graph (torch runs clip_grad_norm_ under no_grad too).
  at::NoGradGuard no_grad;

  std::vector<at::Tensor> grads;
  grads.reserve(parameters.size());
  bool any_double = false;
  for (const auto& p : parameters) {
    if (!p.defined() || !p.grad().defined()) continue;
    grads.push_back(p.grad());
    any_double = any_double || grads.back().scalar_type() == at::kDouble;
  }
  if (grads.empty()) return at::zeros({}, at::TensorOptions().dtype(at::kFloat));

  const at::ScalarType acc = any_double ? at::kDouble : at::kFloat;
  const at::Device out_device = grads.front().device();
  std::vector<at::Tensor> norms;
  if (on_one_gpu_dense(grads)) {
    // One multi-tensor kernel for all the norms, as torch's clip_grad_norm_ does on CUDA (its
    // foreach path): one norm kernel per tensor made clipping 5.4 ms of a 37 ms BERT-base step
    // on an H100. The CPU keeps the per-tensor norms (same values, no launch cost to save).
    norms = at::_foreach_norm(grads, 2, acc);
  } else {
    norms.reserve(grads.size());
    for (const auto& g : grads) {
      at::Tensor n = grad_norm(g, acc);
      norms.push_back(n.device() == out_device ? std::move(n) : n.to(out_device));
    }
  }
  at::Tensor total_norm =
      norms.size() == 1 ? norms.front() : at::linalg_vector_norm(at::stack(norms), 2);
  if (max_norm <= 0.0) return total_norm;

  // Kept as a device tensor and clamped there: deciding "clip or not" on the host would need
  // the norm's value, i.e. a synchronisation every step.
  const at::Tensor coef = at::clamp_max(max_norm / (total_norm + 1e-6), 1.0);
  if (on_one_gpu_dense(grads)) {
    at::_foreach_mul_(grads, coef);  // a 0-dim factor: bf16/half gradients stay bf16/half
    return total_norm;
  }
  at::Tensor coef_here = coef;
  for (auto& g : grads) {
    if (coef_here.device() != g.device()) coef_here = coef.to(g.device());
    // A 0-dim factor does not promote: bf16/half gradients stay bf16/half.
    g.mul_(coef_here);
  }
  return total_norm;
}

}  // namespace ctrainer
