#pragma once
/// \file GradientReducer: the bucketed, backward-overlapped gradient all-reduce of DDPStrategy
/// (torch's c10d::Reducer, reduced to what ctrainer needs).
#include <cstddef>
#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include <ctrainer/distributed/process_group.h>

namespace ctrainer {

/// How GradientReducer buckets and when it communicates (DDPOptions, in bytes).
struct GradientReducerOptions {
  std::size_t first_bucket_bytes = std::size_t{1} << 20;  ///< capacity of the first bucket
  std::size_t bucket_cap_bytes = std::size_t{25} << 20;   ///< capacity of the other buckets
  /// Log once when a synchronising backward left buckets incomplete (unused parameters).
  bool warn_on_unused = true;
  /// Launch each bucket's all-reduce from the hooks as soon as it is complete (true), or all
  /// of them in finalize() after backward (false: classic non-overlapped data parallelism).
  bool overlap_with_backward = true;
};

/// What the last synchronising backward communicated and how long finalize() was blocked by
/// it (DDPStrategy::last_stats). Measured always: a few clock reads per bucket.
struct ReducerStats {
  /// Bytes all-reduced per bucket, in bucket (launch) order.
  std::vector<std::size_t> bucket_bytes;
  /// Per bucket: seconds from its launch until finalize() saw its wait() return. Buckets
  /// complete in the background, so for a bucket launched early in backward this is an upper
  /// bound of its all-reduce time, not the all-reduce time itself.
  std::vector<double> bucket_seconds;
  /// Buckets launched by the hooks while backward ran (the rest were launched by finalize()).
  std::size_t buckets_launched_in_backward = 0;
  /// Exposed communication: wall seconds finalize() spent launching the remaining buckets and
  /// waiting for all-reduces, i.e. communication not hidden behind backward. It includes
  /// waiting for slower ranks to reach the collective.
  double exposed_seconds = 0;
  /// Sum of bucket_bytes.
  std::size_t total_bytes() const;
};

/// Owns one flat gradient buffer per bucket and makes every parameter's .grad a view into it
/// (torch DDP's gradient_as_bucket_view). A post hook on each parameter's gradient accumulator
/// counts the ready gradients of its bucket; when a synchronising backward has completed a bucket,
/// its all-reduce starts while backward goes on with the earlier layers.
class GradientReducer {
 public:
  /// `parameters`: the trainable parameters in registration order. Buckets are filled in
  /// reverse order (the order backward produces gradients): the first holds at most
  /// `options.first_bucket_bytes`, the others at most `options.bucket_cap_bytes` (a larger
  /// parameter gets a bucket of its own); a new bucket also starts where dtype or device
  /// change. Existing gradients are copied into the buffers. `group` must outlive the reducer.
  GradientReducer(ProcessGroup& group, std::vector<at::Tensor> parameters,
                  const GradientReducerOptions& options);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// Before backward: whether this backward's gradients are to be reduced.
  void prepare(bool sync);
  /// After backward. When synchronising: launches the buckets not launched during backward
  /// (all of them without overlap; otherwise those holding unused parameters), waits for every
  /// all-reduce in order, divides by the world size and records last_stats(). Always resets
  /// the per-backward counters.
  void finalize();
  /// Zeroes every bucket's buffer (the gradients stay views).
  void zero_grad();
  std::size_t num_buckets() const;
  /// Statistics of the last synchronising backward; empty before the first.
  const ReducerStats& last_stats() const;

  /// Implementation detail, public only so that the accumulator hooks (gradient_reducer.cpp)
  /// can name it.
  struct State;

 private:
  /// Shared with the hooks, which stay registered on the gradient accumulators after the reducer
  /// is gone: they hold a weak_ptr and do nothing once it expired.
  std::shared_ptr<State> state_;
};

}  // namespace ctrainer
