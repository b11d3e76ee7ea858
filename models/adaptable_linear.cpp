#include <ctrainer/models/adaptable_linear.h>

#include <ctrainer/models/linear_kernel.h>

namespace ctrainer {

at::Tensor AdaptableLinearImpl::forward(const at::Tensor& input) {
  return adapted(input,
                 ctrainer::linear(input, weight,
                                  bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt));
}

}  // namespace ctrainer
