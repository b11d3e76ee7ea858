#pragma once
/// \file DDPStrategy: data-parallel training over a ProcessGroup, as torch's
/// DistributedDataParallel does it: gradients are bucketed into flat buffers and each bucket is
/// all-reduced asynchronously as soon as backward has produced all of its gradients.
#include <cstdint>
#include <memory>
#include <vector>

#include <ctrainer/distributed/collective_strategy.h>
#include <ctrainer/distributed/gradient_reducer.h>
#include <ctrainer/distributed/process_group.h>

namespace ctrainer {

/// Options of DDPStrategy (HF TrainingArguments ddp_* / torch DDP constructor).
struct DDPOptions {
  /// Capacity of a gradient bucket in MiB (HF ddp_bucket_cap_mb; torch's default is 25).
  double bucket_cap_mb = 25;
  /// Capacity of the first bucket (the last parameters), smaller so that the first all-reduce
  /// starts early in backward (torch DDP's _DEFAULT_FIRST_BUCKET_BYTES, 1 MiB).
  double first_bucket_mb = 1;
  /// Whether some parameters may get no gradient in a step (HF ddp_find_unused_parameters).
  /// Either way the result is correct: buckets that backward did not complete are reduced at
  /// the end of backward (their unused gradients are zero). With false, that is logged once,
  /// since it means those buckets did not overlap with backward.
  bool find_unused_parameters = false;
  /// Whether a bucket's all-reduce starts during backward, as soon as backward has produced
  /// all of its gradients (torch DDP's behaviour). With false, every bucket is all-reduced
  /// after backward, in bucket order: classic non-overlapped data parallelism, slower, for
  /// measuring what the overlap hides (ctrainer-bench ddp). The results are bitwise the same.
  bool overlap_with_backward = true;
};

/// One process per device; gradients are averaged over the process group on every
/// synchronising backward. After the reduction every rank holds bitwise-identical gradients,
/// so clipping and the optimizer step need no further communication.
class DDPStrategy : public CollectiveStrategy {
 public:
  /// `group` must outlive the strategy.
  DDPStrategy(ProcessGroup& group, DDPOptions options = {});
  ~DDPStrategy() override;
  DDPStrategy(const DDPStrategy&) = delete;
  DDPStrategy& operator=(const DDPStrategy&) = delete;

  /// Moves the model to `device`, broadcasts its parameters and buffers from rank 0, and
  /// builds the gradient buckets: each trainable parameter's .grad becomes a view into its
  /// bucket's flat buffer. Collective. Call once, before the optimizer is created or stepped.
  void setup(torch::nn::Module& model, const c10::Device& device) override;
  /// loss.backward(); with `sync`, also averages the gradients over all ranks (buckets are
  /// launched during backward and waited for here). Without `sync` (an accumulation micro-step)
  /// gradients only accumulate locally.
  void backward(const at::Tensor& loss, bool sync) override;
  /// The local norm, which is the global one: gradients are identical on every rank.
  at::Tensor clip_grad_norm(torch::nn::Module& model, double max_norm) override;
  void optimizer_step(torch::optim::Optimizer& optimizer) override;
  /// Zeroes the flat buffers. Gradients must stay views into them, so neither set-to-none nor
  /// Optimizer::zero_grad (which sets gradients to none by default in torch 2.x).
  void zero_grad(torch::nn::Module& model) override;

  /// Number of gradient buckets (for tests and logs); 0 before setup().
  std::size_t num_buckets() const;
  /// Communication statistics of the last synchronising backward: bytes per bucket and the
  /// communication time backward did not hide (see ReducerStats). Empty before the first.
  const ReducerStats& last_stats() const;

 private:
  DDPOptions options_;
  std::unique_ptr<GradientReducer> reducer_;
};

}  // namespace ctrainer
