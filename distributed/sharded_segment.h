#pragma once
/// \file ShardedSegment: one flat segment of a sharded strategy on this rank: the full parameter
/// buffer (always there, or all-gathered on demand for ZeRO-3 units), this rank's shard of it,
/// the fp32 master slice and gradient shard the optimizer steps, and the segment's collectives.
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include <ctrainer/distributed/flat_layout.h>
#include <ctrainer/distributed/process_group.h>

namespace ctrainer {

/// Where a segment keeps what, and how it treats parameters and gradients.
struct SegmentPlacement {
  /// ZeRO-3 unit: the full parameters exist only between gather() and release(); this rank's
  /// shard is kept in `parameter_shard_device` otherwise. Else they are always there.
  bool shards_parameters = false;
  /// ZeRO-1: full gradients accumulate locally (parameters' .grad are views of one flat buffer)
  /// and are reduce-scattered at the end of an accumulation window. Else (ZeRO-2/3) each backward
  /// reduce-scatters its gradients into the shard and drops them.
  bool keeps_full_gradients = false;
  c10::Device compute_device{at::kCPU};          ///< where the model runs
  c10::Device parameter_shard_device{at::kCPU};  ///< ZeRO-3 shard (CPU with offload_param)
  c10::Device master_device{at::kCPU};           ///< master and optimizer (CPU with offload)
  /// Use a separate master copy even where the shard could serve (offload, or for tests).
  bool separate_master = false;
};

/// Bytes a segment holds, by kind (aliases counted once, in this order).
struct SegmentTensors {
  std::vector<at::Tensor> parameters;  ///< full buffer (when allocated) and shard
  std::vector<at::Tensor> gradients;   ///< full gradients, gradient shard, pending gradients
  std::vector<at::Tensor> master;      ///< fp32 master shard
};

class ShardedSegment {
 public:
  /// Builds the flat buffer from the members' current values (identical on every rank), makes
  /// every member parameter a view of it, and keeps this rank's shard. With shards_parameters the
  /// full buffer is released at once.
  /// `group` holds the ranks the segment is sharded over (`rank` is this rank in it); with
  /// `replicas` (HYBRID_SHARD: the ranks holding the same shard on the other nodes) the reduced
  /// gradient shard is also summed over the replicas. Both groups must outlive the segment.
  ShardedSegment(FlatLayout layout, int64_t rank, const SegmentPlacement& placement,
                 ProcessGroup& group, ProcessGroup* replicas = nullptr);
  ShardedSegment(const ShardedSegment&) = delete;
  ShardedSegment& operator=(const ShardedSegment&) = delete;

  const FlatLayout& layout() const { return layout_; }
  const SegmentPlacement& placement() const { return placement_; }
  /// The optimizer's tensors: one view of the master per owned slice, whose .grad is the same
  /// slice of the gradient shard. Aligned with owned_slices().
  const std::vector<at::Tensor>& optimizer_pieces() const { return pieces_; }
  const std::vector<OwnedSlice>& owned_slices() const { return slices_; }

  // ---- parameters (ZeRO-3 units) ----
  /// Starts all-gathering the full parameters unless they are there or on their way.
  void gather_async();
  /// Returns once the full parameters are there (gathering them if nobody asked yet).
  void wait_gathered();
  /// Frees the full parameters' memory (the parameters keep their shapes, but hold no data until
  /// the next gather). No-op for segments that do not shard parameters.
  void release();
  bool gathered() const { return state_ == State::kGathered; }
  /// The full parameters (gathered) were overwritten: this rank's chunk of them becomes the
  /// shard and the master. Every rank must have written the same values.
  void take_full_values();

  // ---- gradients ----
  /// A member's gradient of the current backward is complete. Returns true when it was the
  /// segment's last one (the segment is ready to reduce).
  bool mark_ready(std::size_t member);
  bool ready() const { return ready_count_ == layout_.members.size(); }
  /// Launches the reduce-scatter of this backward's gradients (members without a gradient count
  /// as zeros) and, for ZeRO-2/3, drops the members' gradients. Collective: every rank launches
  /// the segments in the same order.
  void launch_reduce();
  /// Waits for the reduce-scatter (then sums over the replicas, if any) and adds the average over
  /// all ranks into the gradient shard.
  void finish_reduce();
  /// Zeroes the gradient shard (and ZeRO-1's full gradients).
  void zero_grad();
  /// Resets the per-backward count of ready members.
  void reset_ready() { ready_count_ = 0; }

  // ---- after the optimizer step ----
  /// Makes the parameters follow the updated master: ZeRO-3 copies it into the shard (when
  /// separate); the others launch the all-gather of the updated shards into the full buffer.
  void launch_parameter_update();
  void finish_parameter_update();

  /// Sum of squares of the gradient shard (fp32 or fp64, on the master device).
  at::Tensor gradient_square_sum() const;
  /// Multiplies the gradient shard by `factor` (a 0-dim tensor) in place.
  void scale_gradients(const at::Tensor& factor);

  /// Everything the segment holds, for memory accounting.
  SegmentTensors tensors() const;
  /// This rank's shard of the parameter values as the optimizer sees them (the master, fp32).
  const at::Tensor& master() const { return master_; }

 private:
  enum class State { kGathered, kGathering, kReleased };

  void allocate_full();
  void free_full();

  FlatLayout layout_;
  int64_t rank_;
  SegmentPlacement placement_;
  ProcessGroup& group_;
  ProcessGroup* replicas_;
  std::vector<OwnedSlice> slices_;

  at::Tensor full_;            ///< padded flat parameters; storage freed while released
  at::Tensor shard_;           ///< ZeRO-3: this rank's parameters between gathers
  at::Tensor master_;          ///< fp32 slice the optimizer steps (may alias full_ or shard_)
  at::Tensor full_gradients_;  ///< ZeRO-1: the members' .grad are views of it
  at::Tensor gradient_shard_;  ///< fp32, on the master device (may alias full_gradients_)
  std::vector<at::Tensor> pieces_;

  State state_ = State::kGathered;
  PendingCollective gather_work_;
  at::Tensor gather_input_;
  std::size_t ready_count_ = 0;
  std::vector<bool> member_ready_;
  bool reduce_pending_ = false;
  PendingCollective reduce_work_;
  at::Tensor reduce_input_;
  at::Tensor reduce_output_;
  PendingCollective update_work_;
  at::Tensor update_input_;
};

}  // namespace ctrainer
