#include <ctrainer/distributed/ddp_strategy.h>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <ctrainer/distributed/tensor_gather.h>
#include <ctrainer/trainer/core/errors.h>
#include <ctrainer/trainer/core/grad_clip.h>

namespace ctrainer {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

/// Rank 0's values of `tensor`, in place on every rank (collectives need contiguous memory).
void broadcast_in_place(ProcessGroup& group, at::Tensor tensor) {
  if (tensor.is_contiguous()) {
    group.broadcast(tensor, 0);
    return;
  }
  at::Tensor wire = tensor.contiguous();
  group.broadcast(wire, 0);
  tensor.copy_(wire);
}

}  // namespace

DDPStrategy::DDPStrategy(ProcessGroup& group, DDPOptions options)
    : group_(group), options_(options) {
  if (options_.bucket_cap_mb <= 0 || options_.first_bucket_mb <= 0)
    throw ArgumentError("DDP bucket sizes must be positive (ddp_bucket_cap_mb)");
}

DDPStrategy::~DDPStrategy() = default;

void DDPStrategy::setup(torch::nn::Module& model, const c10::Device& device) {
  model.to(device);
  {
    // Every rank starts from rank 0's weights, whatever its seed did (torch DDP's
    // _sync_module_states). One collective per tensor: setup runs once.
    at::NoGradGuard no_grad;
    for (auto& p : model.parameters()) broadcast_in_place(group_, p);
    for (auto& b : model.buffers()) broadcast_in_place(group_, b);
  }
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

at::Tensor DDPStrategy::mean_across_processes(const at::Tensor& value) {
  at::Tensor mean = value.detach().contiguous().clone();
  group_.all_reduce(mean, Reduction::kAverage);
  return mean;
}

at::Tensor DDPStrategy::any_across_processes(const at::Tensor& flag) {
  at::Tensor any = flag.detach().ne(0).to(at::kFloat);
  group_.all_reduce(any, Reduction::kMax);
  return any.to(flag.scalar_type());
}

std::vector<at::Tensor> DDPStrategy::all_gather(const at::Tensor& tensor) {
  return all_gather_variable(group_, tensor);
}

std::vector<std::string> DDPStrategy::all_gather_strings(const std::string& value) {
  return group_.all_gather_strings(value);
}

void DDPStrategy::barrier() {
  group_.barrier();
}

int64_t DDPStrategy::world_size() const {
  return group_.world_size();
}

std::size_t DDPStrategy::num_buckets() const {
  return reducer_ ? reducer_->num_buckets() : 0;
}

const ReducerStats& DDPStrategy::last_stats() const {
  static const ReducerStats kNone;
  return reducer_ ? reducer_->last_stats() : kNone;
}

}  // namespace ctrainer
