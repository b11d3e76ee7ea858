#include <ctrainer/trainer/optim/fused_adamw.h>

#include <map>
#include <tuple>
#include <vector>

#include <ATen/ops/_fused_adamw.h>
#include <torch/autograd.h>

namespace ctrainer {
namespace {

/// The tensors of one `_fused_adamw_` call: the kernel wants one device and one dtype per call
/// (torch.optim groups them the same way, _group_tensors_by_device_and_dtype).
struct FusedBatch {
  std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
};

}  // namespace

at::Tensor FusedAdamW::step(LossClosure closure) {
  at::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    std::map<std::tuple<c10::DeviceType, c10::DeviceIndex, at::ScalarType>, FusedBatch> batches;
    for (auto& param : group.params()) {
      if (!param.grad().defined()) continue;
      TORCH_CHECK(!param.grad().is_sparse(),
                  "AdamW does not support sparse gradients; use SparseAdam instead");
      auto& slot = state_[param.unsafeGetTensorImpl()];
      if (!slot) {
        auto state = std::make_unique<torch::optim::AdamWParamState>();
        state->exp_avg(at::zeros_like(param, at::MemoryFormat::Preserve));
        state->exp_avg_sq(at::zeros_like(param, at::MemoryFormat::Preserve));
        if (options.amsgrad())
          state->max_exp_avg_sq(at::zeros_like(param, at::MemoryFormat::Preserve));
        slot = std::move(state);
      }
      auto& state = static_cast<torch::optim::AdamWParamState&>(*slot);
      state.step(state.step() + 1);
      auto& batch = batches[{param.device().type(), param.device().index(), param.scalar_type()}];
      batch.params.push_back(param);
      batch.grads.push_back(param.grad());
      batch.exp_avgs.push_back(state.exp_avg());
      batch.exp_avg_sqs.push_back(state.exp_avg_sq());
      if (options.amsgrad()) batch.max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
      // The kernel reads the step count from a float tensor (torch.optim keeps its fused steps
      // as float32 tensors); ours stays the integer AdamWParamState carries.
      batch.steps.push_back(
          at::full({}, static_cast<double>(state.step()),
                   at::TensorOptions().dtype(at::kFloat).device(param.device())));
    }
    const auto [beta1, beta2] = options.betas();
    for (auto& [key, batch] : batches) {
      at::_fused_adamw_(batch.params, batch.grads, batch.exp_avgs, batch.exp_avg_sqs,
                        batch.max_exp_avg_sqs, batch.steps, options.lr(), beta1, beta2,
                        options.weight_decay(), options.eps(), options.amsgrad(),
                        /*maximize=*/false);
    }
  }
  return loss;
}

}  // namespace ctrainer
