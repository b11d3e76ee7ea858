#include <ctrainer/distributed/collective_strategy.h>

#include <torch/nn/module.h>

#include <ctrainer/distributed/tensor_gather.h>

namespace ctrainer {
namespace {

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

void CollectiveStrategy::broadcast_module_state(torch::nn::Module& model) {
  // One collective per tensor: setup runs once.
  at::NoGradGuard no_grad;
  for (auto& p : model.parameters()) broadcast_in_place(group_, p);
  for (auto& b : model.buffers()) broadcast_in_place(group_, b);
}

at::Tensor CollectiveStrategy::mean_across_processes(const at::Tensor& value) {
  at::Tensor mean = value.detach().contiguous().clone();
  group_.all_reduce(mean, Reduction::kAverage);
  return mean;
}

at::Tensor CollectiveStrategy::any_across_processes(const at::Tensor& flag) {
  at::Tensor any = flag.detach().ne(0).to(at::kFloat);
  group_.all_reduce(any, Reduction::kMax);
  return any.to(flag.scalar_type());
}

std::vector<at::Tensor> CollectiveStrategy::all_gather(const at::Tensor& tensor) {
  return all_gather_variable(group_, tensor);
}

std::vector<std::string> CollectiveStrategy::all_gather_strings(const std::string& value) {
  return group_.all_gather_strings(value);
}

void CollectiveStrategy::barrier() {
  group_.barrier();
}

int64_t CollectiveStrategy::world_size() const {
  return group_.world_size();
}

}  // namespace ctrainer
