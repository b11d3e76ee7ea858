#pragma once
/// \file Who this process is in a (possibly multi-process) job, read from the launch
/// environment. Single-process runs get rank 0 of 1.
#include <cstdint>

namespace ctrainer {

/// Rank information of the current process.
struct ProcessInfo {
  int64_t rank = 0;              ///< global rank (RANK)
  int64_t world_size = 1;        ///< number of processes (WORLD_SIZE)
  int64_t local_rank = 0;        ///< rank on this node (LOCAL_RANK)
  int64_t local_world_size = 1;  ///< processes on this node (LOCAL_WORLD_SIZE)

  bool is_world_process_zero() const { return rank == 0; }
  bool is_local_process_zero() const { return local_rank == 0; }

  /// Reads RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE (torchrun names); absent -> 0 of 1.
  /// Throws ArgumentError when a variable is not an integer or out of range.
  static ProcessInfo from_environment();
};

}  // namespace ctrainer
