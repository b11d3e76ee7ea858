#include <ctrainer/models/adaptable_linear.h>

namespace ctrainer {

at::Tensor AdaptableLinearImpl::forward(const at::Tensor& input) {
  return adapted(input, torch::nn::LinearImpl::forward(input));
}

}  // namespace ctrainer
