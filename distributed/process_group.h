#pragma once
/// \file The process group of a multi-process job: rendezvous through a TCP store at
/// MASTER_ADDR:MASTER_PORT (hosted by rank 0, or by torchrun's agent when
/// TORCHELASTIC_USE_AGENT_STORE=True), then a Gloo (CPU) or NCCL (CUDA) communicator. c10d is
/// only included by process_group.cpp, so users of this header compile quickly.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include <ctrainer/distributed/process_info.h>

namespace ctrainer {

/// A collective operation or the rendezvous failed: a peer crashed, hung past the timeout, or
/// never joined. The message names the problem (address, world size, how many ranks joined).
/// After it the process group is unusable; the job should exit so the launcher can restart it.
class DistributedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "gloo" or "nccl": `requested` (--ddp_backend) when given, else nccl for a CUDA device and
/// gloo otherwise (HF's choice). Throws ArgumentError for an unknown backend or nccl in a build
/// without CUDA.
std::string resolve_backend(const std::optional<std::string>& requested, const c10::Device& device);

/// How all_reduce combines the ranks' tensors.
enum class Reduction {
  kSum,
  kAverage,  ///< the sum divided by the world size (c10d's AVG: bitwise the same as sum, then /N)
  kMax,
};

/// A collective launched asynchronously (ProcessGroup::all_reduce_async). The tensor it
/// works on must stay alive and untouched until wait() returned.
class PendingCollective {
 public:
  PendingCollective() = default;
  /// Blocks until the collective completed. Throws DistributedError on timeout or a lost peer.
  /// Waiting twice, or on a default-constructed PendingCollective, is a no-op.
  void wait() {
    if (wait_) std::exchange(wait_, nullptr)();
  }
  bool pending() const { return static_cast<bool>(wait_); }

 private:
  friend class ProcessGroup;
  explicit PendingCollective(std::function<void()> wait) : wait_(std::move(wait)) {}
  std::function<void()> wait_;  // type-erased so that c10d::Work stays out of this header
};

/// A peer that died leaves its sockets closed, and Gloo's next write to one raises SIGPIPE, whose
/// default action ends this process at once (exit 141, no message) instead of the collective
/// failing with an error that names the peer and --ddp_timeout. CPython ignores SIGPIPE at start,
/// so torch.distributed never meets it; ProcessGroup's constructor does the same, unless the
/// program installed its own SIGPIPE handler (kept).
void ignore_broken_pipes();

/// Seconds this process has spent blocked waiting for collectives of any ProcessGroup to finish
/// (monotonic, from the first group on): the part of communication that did not overlap
/// computation. With NCCL a wait only orders CUDA streams, so GPU communication shows up in the
/// next host synchronisation instead. The step profiler reads it.
double collective_wait_seconds();

/// How to build a process group.
struct ProcessGroupOptions {
  std::string backend = "gloo";  ///< "gloo" or "nccl" (see resolve_backend)
  /// Rendezvous and collective timeout (--ddp_timeout; HF's default is 1800 s).
  std::chrono::milliseconds timeout = std::chrono::seconds(1800);
};

/// An initialised process group (RAII). Creating it is collective: every rank of
/// `info.world_size` must create one with the same MASTER_ADDR:MASTER_PORT. Destroying it tears
/// it down (see shutdown()).
class ProcessGroup {
 public:
  /// Rendezvous and backend setup. Rank 0 hosts the TCP store, unless `info.use_agent_store`
  /// (torchrun's agent serves it; every rank connects). Every key goes under
  /// `info.store_prefix()`, so a restarted attempt never sees the keys of the one before.
  /// Throws DistributedError when
  /// the store is unreachable or not every rank joins within `options.timeout` (the message
  /// names MASTER_ADDR:MASTER_PORT, the world size and how many ranks joined).
  ProcessGroup(const ProcessInfo& info, const ProcessGroupOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int64_t rank() const;
  int64_t world_size() const;
  const std::string& backend() const;
  /// The launch information this group was built from (for a subgroup: its rank and size).
  const ProcessInfo& process_info() const;

  /// The process group of the ranks in `members` (ranks of this group, ascending, this rank
  /// among them), on the same backend, store and timeout: for collectives among some ranks
  /// (HYBRID_SHARD's node and replica groups). Collective over `members`: each of them must ask
  /// for the same subgroups in the same order. The subgroup belongs to this group: it is shut
  /// down before it and lives as long as it; asking again for the same members returns it.
  /// Throws ArgumentError for a malformed `members`, DistributedError when the members do not
  /// all join within the timeout.
  ProcessGroup& subgroup(const std::vector<int64_t>& members);

  /// Blocks until every rank arrives. Throws DistributedError on timeout or a lost peer.
  void barrier();
  /// In-place reduction of `tensor` over all ranks (same shape and dtype everywhere; fp32, fp64,
  /// fp16, bf16 and integers on Gloo and NCCL).
  void all_reduce(at::Tensor& tensor, Reduction reduction = Reduction::kSum);
  /// Launches an in-place reduction of `tensor` over all ranks and returns without waiting, so
  /// that communication overlaps the rest of the backward pass (DDPStrategy). Every rank must
  /// launch its collectives in the same order.
  PendingCollective all_reduce_async(at::Tensor& tensor, Reduction reduction = Reduction::kSum);
  /// Launches a reduce-scatter: `input` (world_size x output.numel() elements, contiguous) is
  /// reduced over all ranks and rank r receives chunk r in `output` (c10d
  /// reduce_scatter_tensor; Gloo implements it as an all-reduce plus a copy). Both tensors must
  /// stay alive and untouched until the returned collective was waited for.
  PendingCollective reduce_scatter_async(at::Tensor& output, at::Tensor& input,
                                         Reduction reduction = Reduction::kSum);
  /// Launches an all-gather into one tensor: `output` (world_size x input.numel() elements,
  /// contiguous) receives every rank's `input`, rank r's at chunk r (c10d
  /// all_gather_into_tensor). Same lifetime rule as reduce_scatter_async.
  PendingCollective all_gather_into_async(at::Tensor& output, at::Tensor& input);
  /// In-place copy of rank `root`'s `tensor` to every rank.
  void broadcast(at::Tensor& tensor, int64_t root = 0);
  /// Every rank's `tensor`, indexed by rank (same shape and dtype on every rank; see
  /// all_gather_variable in tensor_gather.h for tensors whose shapes differ). The results are on
  /// `tensor`'s device.
  std::vector<at::Tensor> all_gather(const at::Tensor& tensor);
  /// Every rank's `value`, indexed by rank, exchanged through the rendezvous store rather than
  /// the backend (for setup checks and small metadata; not for bulk data). Collective: every
  /// rank must call it the same number of times.
  std::vector<std::string> all_gather_strings(const std::string& value);

  /// Releases the communicator and the store without the final barrier: for a process that
  /// leaves because of an error, whose peers are somewhere else in the program (a barrier would
  /// be matched against their collectives, or wait for the timeout). Idempotent.
  void abort();

  /// Clean teardown: a final barrier (so that rank 0, when it hosts the store, leaves last), then
  /// the communicator and the store are released. Idempotent. Throws DistributedError when the
  /// barrier fails; the destructor calls it and only logs a failure. After a collective failed
  /// (a DistributedError was thrown) the group is broken and shutdown() skips the barrier.
  void shutdown();

 private:
  struct State;
  explicit ProcessGroup(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace ctrainer
