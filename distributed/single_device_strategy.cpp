#include <ctrainer/distributed/strategy.h>

#include <stdexcept>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <ctrainer/core/grad_clip.h>

namespace ctrainer {

void Strategy::load_sharded_state(torch::optim::Optimizer& /*optimizer*/,
                                  const std::filesystem::path& dir) {
  throw std::logic_error("load_sharded_state(" + dir.string() +
                         "): this strategy does not shard the optimizer state");
}

std::vector<at::Tensor> Strategy::optimizer_parameters(torch::nn::Module& model) {
  std::vector<at::Tensor> trainable;
  for (auto& p : model.parameters())
    if (p.requires_grad()) trainable.push_back(p);
  return trainable;
}

void SingleDeviceStrategy::setup(torch::nn::Module& model, const c10::Device& device) {
  model.to(device);
}

void SingleDeviceStrategy::backward(const at::Tensor& loss, bool /*sync*/) {
  loss.backward();
}

at::Tensor SingleDeviceStrategy::clip_grad_norm(torch::nn::Module& model, double max_norm) {
  return clip_grad_norm_(model.parameters(), max_norm);
}

void SingleDeviceStrategy::optimizer_step(torch::optim::Optimizer& optimizer) {
  optimizer.step();
}

void SingleDeviceStrategy::zero_grad(torch::nn::Module& model) {
  // Dropping the gradients (set to none) avoids a memset per parameter per step.
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
}

}  // namespace ctrainer
