#pragma once
/// \file Strategy: everything that depends on how many processes train the model. The Trainer
/// never talks to devices or process groups directly; it calls its Strategy.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace ctrainer {

// A strategy sees modules and their parameters, never models/: any torch::nn::Module trains.

/// How gradients are produced, synchronised, clipped and applied.
class Strategy {
 public:
  virtual ~Strategy() = default;
  /// Moves the model to `device` (and, for distributed strategies, wraps/broadcasts it).
  virtual void setup(torch::nn::Module& model, const c10::Device& device) = 0;
  /// Backward of a (scaled) micro-batch loss. `sync` is false inside an accumulation window.
  virtual void backward(const at::Tensor& loss, bool sync) = 0;
  /// Clips the global L2 gradient norm to `max_norm` (no clipping when <= 0) and returns the
  /// norm before clipping as a device tensor (no host synchronisation).
  virtual at::Tensor clip_grad_norm(torch::nn::Module& model, double max_norm) = 0;
  virtual void optimizer_step(torch::optim::Optimizer& optimizer) = 0;
  /// Called once after the optimizer was created over the model's parameters and before it
  /// steps: a sharded strategy replaces each param group's parameters with the slices this rank
  /// updates. The optimizer must not hold state yet.
  virtual void setup_optimizer(torch::optim::Optimizer& /*optimizer*/) {}
  /// The tensors whose .grad the optimizer steps, which loss scaling unscales: the model's
  /// trainable parameters, or a sharded strategy's slices of them.
  virtual std::vector<at::Tensor> optimizer_parameters(torch::nn::Module& model);
  /// Right before each forward of the model, training or evaluation (ZeRO-3 all-gathers the
  /// parameters outside its wrapped units; collective).
  virtual void before_forward(torch::nn::Module& /*model*/) {}
  /// Whether a forward runs collectives (ZeRO-3 gathers units): then every rank must run the
  /// same number of forwards, and a rank that ran out of evaluation data calls
  /// forward_without_data for each forward the others still run.
  virtual bool forward_has_collectives() const { return false; }
  /// The collectives of one evaluation (no-grad) forward, without computing anything.
  virtual void forward_without_data(torch::nn::Module& /*model*/) {}
  /// Makes every parameter of the model hold its full value until release_full_parameters
  /// (ZeRO-3 all-gathers them; collective): around saving, loading or consolidating weights.
  virtual void gather_full_parameters(torch::nn::Module& /*model*/) {}
  /// Ends gather_full_parameters. `changed`: the full values were overwritten (weights loaded
  /// into them), so the shards and the optimizer's master copies take them over.
  virtual void release_full_parameters(torch::nn::Module& /*model*/, bool /*changed*/ = false) {}
  virtual void zero_grad(torch::nn::Module& model) = 0;
  /// Mean of a scalar over all processes (the logged training loss).
  virtual at::Tensor mean_across_processes(const at::Tensor& value) = 0;
  /// A flag (one-element float tensor, nonzero = set) that is set when it is set on any process:
  /// loss scaling's found-inf flag, all-reduced after the gradients were reduced and unscaled, so
  /// that every rank skips the same optimizer steps. A distributed strategy all-reduces it (MAX,
  /// or SUM then > 0) on the gradients' device.
  virtual at::Tensor any_across_processes(const at::Tensor& flag) = 0;
  /// Every process's `tensor`, indexed by rank; shapes may differ between processes (dtype and
  /// number of dimensions may not). Evaluation gathers its predictions with it.
  virtual std::vector<at::Tensor> all_gather(const at::Tensor& tensor) { return {tensor}; }
  /// Every process's `value`, indexed by rank (small metadata: setup checks).
  virtual std::vector<std::string> all_gather_strings(const std::string& value) { return {value}; }
  /// Blocks until every process arrived (around checkpoint writes).
  virtual void barrier() {}
  virtual int64_t world_size() const = 0;

  // ---- the state the strategy owns, in checkpoints --------------------------------------------
  // The checkpoint code asks the strategy; it never looks at which strategy it has.

  /// Whether the optimizer's state (and the fp32 masters) is split across processes (ZeRO,
  /// FSDP): then a checkpoint keeps it through save_sharded_state / load_sharded_state instead of
  /// the plain optimizer files, and resumes only into a run that shards too.
  virtual bool shards_optimizer_state() const { return false; }
  /// Writes this process's part of the sharded state into checkpoint folder `dir` (nothing for
  /// a process that holds a copy of another's part, as HYBRID_SHARD's other nodes). Not
  /// collective: the checkpoint code orders the processes' writes.
  virtual void save_sharded_state(const torch::optim::Optimizer& /*optimizer*/,
                                  const std::filesystem::path& /*dir*/) const {}
  /// The files of the other processes' parts, relative to a checkpoint folder: what the process
  /// that commits a checkpoint collects from where the others staged them.
  virtual std::vector<std::filesystem::path> sharded_state_files_of_other_processes() const {
    return {};
  }
  /// Loads the sharded state of checkpoint folder `dir`, written at any world size, into the
  /// optimizer and the parameters (collective). Throws ArgumentError naming the file and the
  /// mismatch; std::logic_error for a strategy that does not shard.
  virtual void load_sharded_state(torch::optim::Optimizer& optimizer,
                                  const std::filesystem::path& dir);
};

/// One process on one device.
class SingleDeviceStrategy : public Strategy {
 public:
  void setup(torch::nn::Module& model, const c10::Device& device) override;
  void backward(const at::Tensor& loss, bool sync) override;
  at::Tensor clip_grad_norm(torch::nn::Module& model, double max_norm) override;
  void optimizer_step(torch::optim::Optimizer& optimizer) override;
  void zero_grad(torch::nn::Module& model) override;
  at::Tensor mean_across_processes(const at::Tensor& value) override { return value; }
  at::Tensor any_across_processes(const at::Tensor& flag) override { return flag; }
  int64_t world_size() const override { return 1; }
};

}  // namespace ctrainer
