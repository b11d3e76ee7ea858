#include <torch/optim/optimizer.h>

#include <ctrainer/distributed/strategy.h>
#include <ctrainer/models/model.h>
#include <ctrainer/trainer/optim/grad_clip.h>

namespace ctrainer {

void SingleDeviceStrategy::setup(Model& model, const c10::Device& device) {
  model.to(device);
}

void SingleDeviceStrategy::backward(const at::Tensor& loss, bool /*sync*/) {
  loss.backward();
}

at::Tensor SingleDeviceStrategy::clip_grad_norm(Model& model, double max_norm) {
  return clip_grad_norm_(model.parameters(), max_norm);
}

void SingleDeviceStrategy::optimizer_step(torch::optim::Optimizer& optimizer) {
  optimizer.step();
}

void SingleDeviceStrategy::zero_grad(Model& model) {
  // Dropping the gradients (set to none) avoids a memset per parameter per step.
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
}

}  // namespace ctrainer
