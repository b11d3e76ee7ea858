#include <ctrainer/distributed/ddp_strategy.h>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/grad_clip.h>

namespace ctrainer {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

DDPStrategy::DDPStrategy(ProcessGroup& group, DDPOptions options)
    : CollectiveStrategy(group), options_(options) {
  if (options_.bucket_cap_mb <= 0 || options_.first_bucket_mb <= 0)
    throw ArgumentError("DDP bucket sizes must be positive (ddp_bucket_cap_mb)");
}

DDPStrategy::~DDPStrategy() = default;

void DDPStrategy::setup(torch::nn::Module& model, const c10::Device& device) {
  model.to(device);
  broadcast_module_state(model);
  std::vector<at::Tensor> trainable;
  for (auto& p : model.parameters())
    if (p.requires_grad()) trainable.push_back(p);
  GradientReducerOptions reducer;
  reducer.first_bucket_bytes = static_cast<std::size_t>(options_.first_bucket_mb * kMiB);
  reducer.bucket_cap_bytes = static_cast<std::size_t>(options_.bucket_cap_mb * kMiB);
  reducer.warn_on_unused = !options_.find_unused_parameters;
  reducer.overlap_with_backward = options_.overlap_with_backward;
  reducer_ = std::make_unique<GradientReducer>(group_, std::move(trainable), reducer);
}

void DDPStrategy::backward(const at::Tensor& loss, bool sync) {
  if (!reducer_) throw std::logic_error("DDPStrategy::backward before setup");
  reducer_->prepare(sync);
  loss.backward();
  reducer_->finalize();
}

at::Tensor DDPStrategy::clip_grad_norm(torch::nn::Module& model, double max_norm) {
  // clip_grad_norm_ scales the gradients in place (mul_), so they stay bucket views.
  return clip_grad_norm_(model.parameters(), max_norm);
}

void DDPStrategy::optimizer_step(torch::optim::Optimizer& optimizer) {
  optimizer.step();
}

void DDPStrategy::zero_grad(torch::nn::Module& /*model*/) {
  if (reducer_) reducer_->zero_grad();
}

std::size_t DDPStrategy::num_buckets() const {
  return reducer_ ? reducer_->num_buckets() : 0;
}

const ReducerStats& DDPStrategy::last_stats() const {
  static const ReducerStats kNone;
  return reducer_ ? reducer_->last_stats() : kNone;
}

}  // namespace ctrainer
