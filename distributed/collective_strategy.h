#pragma once
/// \file CollectiveStrategy: what every multi-process strategy (DDP, sharded) does the same way
/// over its ProcessGroup: reductions of logged values and flags, gathers for evaluation and setup
/// checks, barriers, and the initial broadcast of rank 0's weights.
#include <string>
#include <vector>

#include <ctrainer/distributed/process_group.h>
#include <ctrainer/distributed/strategy.h>

namespace ctrainer {

/// Base of the strategies that train over a ProcessGroup. `group` must outlive the strategy.
class CollectiveStrategy : public Strategy {
 public:
  explicit CollectiveStrategy(ProcessGroup& group) : group_(group) {}

  at::Tensor mean_across_processes(const at::Tensor& value) override;
  at::Tensor any_across_processes(const at::Tensor& flag) override;
  std::vector<at::Tensor> all_gather(const at::Tensor& tensor) override;
  std::vector<std::string> all_gather_strings(const std::string& value) override;
  void barrier() override;
  int64_t world_size() const override;

 protected:
  /// Every rank starts from rank 0's parameters and buffers, whatever its seed did (torch
  /// DDP's _sync_module_states, FSDP's sync_module_states). Collective.
  void broadcast_module_state(torch::nn::Module& model);

  ProcessGroup& group_;
};

}  // namespace ctrainer
