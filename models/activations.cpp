#include <ctrainer/models/activations.h>

#include <cmath>

#include <ctrainer/core/errors.h>

namespace ctrainer {

bool is_supported_activation(const std::string& name) {
  return name == "gelu" || name == "gelu_new" || name == "relu" || name == "silu" ||
         name == "swish";
}

at::Tensor apply_activation(const std::string& name, const at::Tensor& x) {
  if (name == "gelu") return at::gelu(x);
  if (name == "gelu_new") {
    // Written out as HF's NewGELUActivation does, so results match it to the last bit; torch's
    // gelu(approximate="tanh") evaluates the same formula in a different order.
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + at::tanh(k * (x + 0.044715 * at::pow(x, 3.0))));
  }
  if (name == "relu") return at::relu(x);
  if (name == "silu" || name == "swish") return at::silu(x);  // HF ACT2FN: both are nn.SiLU
  throw ArgumentError("hidden activation \"" + name +
                      "\" is not supported; use gelu, gelu_new, relu or silu");
}

}  // namespace ctrainer
