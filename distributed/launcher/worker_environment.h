#pragma once
/// \file The environment torchrun gives each worker, computed from the launch options.
#include <cstdint>
#include <map>
#include <string>

#include <ctrainer/distributed/launcher/launch_options.h>

namespace ctrainer::launcher {

/// Where the workers meet and which attempt this is.
struct Rendezvous {
  std::string master_addr;
  int master_port = 0;
  std::string run_id;
  int64_t restart_count = 0;  ///< TORCHELASTIC_RESTART_COUNT
};

/// The variables set for the worker `local_rank` on this node, with torchrun's names and
/// values: RANK = node_rank * nproc_per_node + local_rank, LOCAL_RANK, WORLD_SIZE,
/// LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME,
/// MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS,
/// TORCHELASTIC_RUN_ID, TORCHELASTIC_USE_AGENT_STORE (False: rank 0 hosts the store),
/// TORCH_NCCL_ASYNC_ERROR_HANDLING (kept when set, else 1) and OMP_NUM_THREADS (kept when set;
/// 1 when unset and nproc_per_node > 1, as torchrun does), and options.extra_environment (the
/// variables of --config_file).
std::map<std::string, std::string> worker_environment(const LaunchOptions& options,
                                                      const Rendezvous& rendezvous,
                                                      int64_t local_rank);

/// True when OMP_NUM_THREADS is unset and several workers share the node: torchrun then sets it
/// to 1 and warns.
bool sets_default_omp_threads(const LaunchOptions& options);

}  // namespace ctrainer::launcher
