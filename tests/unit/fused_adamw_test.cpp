// FusedAdamW (torch's _fused_adamw_ kernel) against the reference torch::optim::AdamW: the same
// trajectory over many steps (float64: to rounding; float32: to a few ulps of the update), the
// closed-form first step, amsgrad, groups with different hyper-parameters, parameters without a
// gradient, and a state that moves between the two optimizers mid-run.
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include <torch/optim/adamw.h>
#include <torch/torch.h>

#include <ctrainer/trainer/optim/fused_adamw.h>

namespace ctrainer {
namespace fused_adamw_test {

using torch::optim::AdamW;
using torch::optim::AdamWOptions;
using torch::optim::OptimizerParamGroup;

// Three parameters of different shapes; the last never gets a gradient.
std::vector<at::Tensor> make_params(at::ScalarType dtype) {
  torch::manual_seed(3);
  std::vector<at::Tensor> params = {torch::randn({7, 5}), torch::randn({5}),
                                    torch::randn({2, 3, 4})};
  for (auto& p : params) p = p.to(dtype).set_requires_grad(true);
  return params;
}

std::vector<at::Tensor> clone_params(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().set_requires_grad(true));
  return out;
}

// Two groups as create_optimizer builds them (decay / no decay), with non-default options.
template <typename Opt>
std::unique_ptr<Opt> make_optimizer(const std::vector<at::Tensor>& params, bool amsgrad) {
  auto options = AdamWOptions(3e-3).betas(std::make_tuple(0.8, 0.95)).eps(1e-6).amsgrad(amsgrad);
  std::vector<OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{params[0], params[2]},
                      std::make_unique<AdamWOptions>(AdamWOptions(options).weight_decay(0.1)));
  groups.emplace_back(std::vector<at::Tensor>{params[1]},
                      std::make_unique<AdamWOptions>(AdamWOptions(options).weight_decay(0.0)));
  return std::make_unique<Opt>(groups, options);
}

// Deterministic gradients for step `step` (the same on both sides), none for params[2].
void set_grads(std::vector<at::Tensor>& params, int64_t step) {
  for (size_t i = 0; i < 2; ++i) {
    auto g = torch::sin(torch::arange(params[i].numel()).to(params[i].scalar_type()) * 0.37 +
                        static_cast<double>(step) * (1.0 + static_cast<double>(i)))
                 .reshape(params[i].sizes());
    params[i].mutable_grad() = g * (step % 3 == 0 ? 10.0 : 0.1);  // varying magnitudes
  }
}

double max_abs_diff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, (a[i] - b[i]).abs().max().item<double>());
  return diff;
}

void check_same_trajectory(at::ScalarType dtype, bool amsgrad, double tolerance) {
  auto fused_params = make_params(dtype);
  auto reference_params = clone_params(fused_params);
  auto fused = make_optimizer<FusedAdamW>(fused_params, amsgrad);
  auto reference = make_optimizer<AdamW>(reference_params, amsgrad);
  const auto start = clone_params(fused_params);
  for (int64_t step = 0; step < 50; ++step) {
    set_grads(fused_params, step);
    set_grads(reference_params, step);
    fused->step();
    reference->step();
  }
  EXPECT_LT(max_abs_diff(fused_params, reference_params), tolerance);
  EXPECT_GT(max_abs_diff(fused_params, start), 1e-2);  // both moved: the comparison means something
  EXPECT_TRUE(torch::equal(fused_params[2], start[2]));  // no gradient: untouched, no state
  EXPECT_EQ(fused->state().count(fused_params[2].unsafeGetTensorImpl()), 0u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& f = static_cast<const torch::optim::AdamWParamState&>(
        *fused->state().at(fused_params[i].unsafeGetTensorImpl()));
    const auto& r = static_cast<const torch::optim::AdamWParamState&>(
        *reference->state().at(reference_params[i].unsafeGetTensorImpl()));
    EXPECT_EQ(f.step(), 50);
    EXPECT_EQ(f.step(), r.step());
    EXPECT_LT((f.exp_avg() - r.exp_avg()).abs().max().item<double>(), tolerance);
    EXPECT_LT((f.exp_avg_sq() - r.exp_avg_sq()).abs().max().item<double>(), tolerance);
    if (amsgrad)
      EXPECT_LT((f.max_exp_avg_sq() - r.max_exp_avg_sq()).abs().max().item<double>(), tolerance);
  }
}

TEST(FusedAdamW, SameTrajectoryAsAdamWInDouble) {
  check_same_trajectory(at::kDouble, /*amsgrad=*/false, 1e-12);
}
TEST(FusedAdamW, SameTrajectoryAsAdamWInDoubleWithAmsgrad) {
  check_same_trajectory(at::kDouble, /*amsgrad=*/true, 1e-12);
}
TEST(FusedAdamW, SameTrajectoryAsAdamWInFloat) {
  // 50 steps of lr 3e-3: float rounding of the two evaluation orders stays far below one step.
  check_same_trajectory(at::kFloat, /*amsgrad=*/false, 1e-5);
}

// Step 1 in closed form: m = (1-b1) g, v = (1-b2) g^2, bias-corrected m^ = g, v^ = g^2, so
// p <- p (1 - lr wd) - lr g / (|g| + eps).
TEST(FusedAdamW, FirstStepClosedForm) {
  auto params = make_params(at::kDouble);
  const auto before = clone_params(params);
  auto optimizer = make_optimizer<FusedAdamW>(params, false);
  set_grads(params, 1);
  optimizer->step();
  const double lr = 3e-3, eps = 1e-6;
  for (size_t i = 0; i < 2; ++i) {
    const double wd = i == 0 ? 0.1 : 0.0;
    const at::Tensor g = params[i].grad();
    const at::Tensor expected = before[i] * (1 - lr * wd) - lr * g / (g.abs() + eps);
    EXPECT_LT((params[i] - expected).abs().max().item<double>(), 1e-15) << i;
  }
}

// A checkpoint of either optimizer continues in the other: the state is AdamW's.
TEST(FusedAdamW, StateMovesBetweenFusedAndReference) {
  auto fused_params = make_params(at::kDouble);
  auto fused = make_optimizer<FusedAdamW>(fused_params, false);
  for (int64_t step = 0; step < 5; ++step) {
    set_grads(fused_params, step);
    fused->step();
  }
  std::stringstream buffer;
  torch::save(*fused, buffer);

  auto reference_params = clone_params(fused_params);
  auto reference = make_optimizer<AdamW>(reference_params, false);
  torch::load(*reference, buffer);
  for (int64_t step = 5; step < 10; ++step) {
    set_grads(fused_params, step);
    set_grads(reference_params, step);
    fused->step();
    reference->step();
  }
  EXPECT_LT(max_abs_diff(fused_params, reference_params), 1e-12);
  const auto& state = static_cast<const torch::optim::AdamWParamState&>(
      *reference->state().at(reference_params[0].unsafeGetTensorImpl()));
  EXPECT_EQ(state.step(), 10);
}

TEST(FusedAdamW, SparseGradientIsRefused) {
  auto params = make_params(at::kFloat);
  auto optimizer = make_optimizer<FusedAdamW>(params, false);
  params[0].mutable_grad() = torch::zeros({7, 5}).to_sparse();
  EXPECT_THROW(optimizer->step(), c10::Error);
}

}  // namespace fused_adamw_test
}  // namespace ctrainer
