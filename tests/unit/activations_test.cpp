// models/activations.h: each activation against its formula as transformers writes it, value and
// gradient. gelu_new runs torch's fused tanh-approximation kernel, so it must agree with HF's
// NewGELUActivation (the formula op by op, here in fp64) to within fp32 rounding.
#include <gtest/gtest.h>

#include <cmath>

#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/activations.h>

namespace ctrainer {
namespace activations_test {

at::Tensor hf_formula(const std::string& name, const at::Tensor& x) {
  if (name == "gelu") return 0.5 * x * (1.0 + at::erf(x / std::sqrt(2.0)));
  if (name == "gelu_new")
    return 0.5 * x * (1.0 + at::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * at::pow(x, 3.0))));
  if (name == "relu") return at::clamp_min(x, 0.0);
  return x * at::sigmoid(x);  // silu, swish
}

TEST(Activations, EachMatchesTransformersFormulaInValueAndGradient) {
  torch::manual_seed(0);
  // Wide enough to reach both saturated tails and the curved middle.
  const at::Tensor input = torch::randn({4096}) * 4.0;
  for (const std::string name : {"gelu", "gelu_new", "relu", "silu", "swish"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(is_supported_activation(name));
    const at::Tensor x = input.detach().requires_grad_();
    const at::Tensor y = apply_activation(name, x);
    y.backward(torch::ones_like(y));
    const at::Tensor x64 = input.to(at::kDouble).detach().requires_grad_();
    const at::Tensor y64 = hf_formula(name, x64);
    y64.backward(torch::ones_like(y64));
    EXPECT_EQ(y.scalar_type(), at::kFloat);
    const double value_error = (y.to(at::kDouble) - y64).abs().max().item<double>();
    const double gradient_error =
        (x.grad().to(at::kDouble) - x64.grad()).abs().max().item<double>();
    // fp32 rounding of values up to ~16 (a few ulps); a wrong constant or a missing term is
    // off by 1e-3 or more.
    EXPECT_LT(value_error, 1e-5);
    EXPECT_LT(gradient_error, 1e-5);
  }
  EXPECT_FALSE(is_supported_activation("gelu_fast"));
  EXPECT_THROW(apply_activation("gelu_fast", input), ArgumentError);
}

}  // namespace activations_test
}  // namespace ctrainer
