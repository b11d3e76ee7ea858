#include <ctrainer/models/activations.h>

#include <ctrainer/core/errors.h>

namespace ctrainer {

bool is_supported_activation(const std::string& name) {
  return name == "gelu" || name == "gelu_new" || name == "relu" || name == "silu" ||
         name == "swish";
}

at::Tensor apply_activation(const std::string& name, const at::Tensor& x) {
  if (name == "gelu") return at::gelu(x);
  if (name == "gelu_new") {
    // HF's NewGELUActivation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as torch's fused
    // kernel (HF's gelu_pytorch_tanh): one pass forward and one backward where the formula
    // written out op by op took eight and about fourteen over the [tokens, 4 x width] tensor
    // (~9 % of a GPT-2 small step on 2 cores). The same formula evaluated in another order:
    // results agree with HF's to about one rounding (tests/unit/activations_test.cpp).
    return at::gelu(x, "tanh");
  }
  if (name == "relu") return at::relu(x);
  if (name == "silu" || name == "swish") return at::silu(x);  // HF ACT2FN: both are nn.SiLU
  throw ArgumentError("hidden activation \"" + name +
                      "\" is not supported; use gelu, gelu_new, relu or silu");
}

}  // namespace ctrainer
