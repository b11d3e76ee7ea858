#pragma once
/// \file ShardedStrategy: ZeRO stages 1-3 (FSDP SHARD_GRAD_OP / FULL_SHARD) over c10d's
/// reduce_scatter_tensor and all_gather_into_tensor. Parameters are laid out in flat segments
/// (flat_layout.h) padded to a multiple of the world size; rank r owns one chunk of every
/// segment and the optimizer steps only that chunk.
///   ZeRO-1: full gradients accumulate locally and are reduce-scattered once per accumulation
///           window; each rank steps its chunk; the updated chunks are all-gathered.
///   ZeRO-2: every backward reduce-scatters its gradients bucket by bucket as backward produces
///           them (overlapped with backward) and drops the full gradients.
///   ZeRO-3: also the parameters are sharded, per wrapped unit (wrap_policy.h): a unit is
///           all-gathered right before its forward and again before its backward, and freed
///           after each; the next unit can be prefetched. Parameters outside units (the root)
///           are gathered by before_forward and freed after backward.
/// HYBRID_SHARD shards inside each node and all-reduces each reduced gradient chunk across the
/// nodes, so N below is then the ranks per node.
/// Memory per rank with fp32 parameters and Adam (Psi parameters, N ranks): ZeRO-1
/// 4Psi+4Psi+8Psi/N, ZeRO-2 4Psi+12Psi/N, ZeRO-3 16Psi/N, plus padding
/// (tests/unit/sharded_memory_test.cpp).
#include <memory>
#include <vector>

#include <ctrainer/distributed/collective_strategy.h>
#include <ctrainer/distributed/sharded_segment.h>
#include <ctrainer/distributed/sharding_options.h>

namespace ctrainer {

/// Bytes one rank holds for training, found by walking the tensors the strategy (and the
/// optimizer's state) hold; memory shared by several tensors is counted once.
struct ShardedMemory {
  int64_t parameters = 0;       ///< full parameters that are allocated, and parameter shards
  int64_t gradients = 0;        ///< full gradients, gradient shards, gradients not yet reduced
  int64_t master = 0;           ///< fp32 master copies that are not the parameters themselves
  int64_t optimizer_state = 0;  ///< the optimizer's per-parameter state (Adam's moments, ...)
  int64_t total() const { return parameters + gradients + master + optimizer_state; }
};

class ShardedStrategy : public CollectiveStrategy {
 public:
  /// `options.stage` must be 1, 2 or 3 (stage 0 is DDPStrategy). `group` must outlive it.
  /// With `options.hybrid` (HYBRID_SHARD) the ranks of each node (LOCAL_WORLD_SIZE of them,
  /// numbered node by node) shard among themselves and the nodes replicate each other: the
  /// subgroups are created here, so construction is then collective.
  ShardedStrategy(ProcessGroup& group, ShardingOptions options);
  ~ShardedStrategy() override;

  /// Moves the model to `device`, broadcasts rank 0's weights, lays the trainable parameters out
  /// in segments and shards them (ZeRO-3: the full parameters are freed here). Collective.
  void setup(torch::nn::Module& model, const c10::Device& device) override;
  /// Replaces every param group's parameters with this rank's slices of them (an optimizer made
  /// over the model's parameters, e.g. by create_optimizer, with no state yet).
  void setup_optimizer(torch::optim::Optimizer& optimizer) override;
  std::vector<at::Tensor> optimizer_parameters(torch::nn::Module& model) override;
  void before_forward(torch::nn::Module& model) override;
  void backward(const at::Tensor& loss, bool sync) override;
  /// The global L2 norm over every rank's gradient shard (one all-reduce), clipped in place.
  at::Tensor clip_grad_norm(torch::nn::Module& model, double max_norm) override;
  /// Steps this rank's slices, then brings the parameters up to date (all-gather for ZeRO-1/2).
  void optimizer_step(torch::optim::Optimizer& optimizer) override;
  void zero_grad(torch::nn::Module& model) override;
  bool forward_has_collectives() const override {
    return options_.stage == ShardingStage::kParameters;
  }
  void forward_without_data(torch::nn::Module& model) override;
  void gather_full_parameters(torch::nn::Module& model) override;
  void release_full_parameters(torch::nn::Module& model, bool changed = false) override;

  /// Makes the parameters follow the masters after they were overwritten (a sharded checkpoint
  /// was loaded into them): the same update as after an optimizer step. Collective.
  void parameters_from_master();

  const ShardingOptions& options() const { return options_; }
  /// The ranks the parameters are sharded over: all of them, or with HYBRID_SHARD those of this
  /// rank's node. A segment's layout is cut into shard_world_size() chunks; this rank owns chunk
  /// shard_rank().
  int64_t shard_world_size() const { return shard_group_->world_size(); }
  int64_t shard_rank() const { return shard_group_->rank(); }
  /// HYBRID_SHARD: which copy of the shards this rank's node holds (its node's index); 0 without
  /// it. Replicas hold identical shards, so the ranks of replica 0 alone write sharded state.
  int64_t replica_index() const { return replica_group_ ? replica_group_->rank() : 0; }
  const std::vector<std::unique_ptr<ShardedSegment>>& segments() const { return segments_; }
  /// What this rank holds now; `optimizer` adds its state (Adam, AdamW and SGD state known).
  ShardedMemory memory(const torch::optim::Optimizer* optimizer = nullptr) const;

  // Checkpoints: the zero/ folder of distributed/sharded_state.h.
  bool shards_optimizer_state() const override { return true; }
  void save_sharded_state(const torch::optim::Optimizer& optimizer,
                          const std::filesystem::path& dir) const override;
  std::vector<std::filesystem::path> sharded_state_files_of_other_processes() const override;
  void load_sharded_state(torch::optim::Optimizer& optimizer,
                          const std::filesystem::path& dir) override;

  /// Implementation detail shared with the autograd and forward hooks (sharded_strategy.cpp).
  struct Hooks;

 private:
  void create_hybrid_groups();
  void launch_ready_in_order();
  void unit_before_forward(std::size_t unit);
  at::Tensor unit_after_forward(std::size_t unit, at::Tensor output);
  void unit_before_backward(std::size_t unit);

  ShardingOptions options_;
  /// The group the segments are sharded over (group_, or this node's subgroup of it), and the
  /// HYBRID_SHARD group of the ranks holding the same chunk on the other nodes (null otherwise).
  ProcessGroup* shard_group_;
  ProcessGroup* replica_group_ = nullptr;
  std::vector<std::unique_ptr<ShardedSegment>> segments_;
  /// ZeRO-3: segment index of each unit, in forward order; the root segments (no unit).
  std::vector<std::size_t> unit_segments_;
  std::vector<std::size_t> root_segments_;
  std::vector<const torch::nn::Module*> unit_modules_;
  /// The order every rank launches the segments' reduce-scatters in.
  std::vector<std::size_t> reduce_order_;
  std::size_t next_reduce_ = 0;
  bool in_backward_ = false;
  bool sync_ = true;
  std::shared_ptr<Hooks> hooks_;
};

}  // namespace ctrainer
