#include <ctrainer/distributed/launcher/worker_environment.h>

#include <cstdlib>

namespace ctrainer::launcher {
namespace {

const char* variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace

bool sets_default_omp_threads(const LaunchOptions& options) {
  return options.nproc_per_node > 1 && variable("OMP_NUM_THREADS") == nullptr;
}

std::map<std::string, std::string> worker_environment(const LaunchOptions& options,
                                                      const Rendezvous& rendezvous,
                                                      int64_t local_rank) {
  const int64_t rank = options.node_rank * options.nproc_per_node + local_rank;
  const std::string world = std::to_string(options.world_size());
  std::map<std::string, std::string> env = {
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"RANK", std::to_string(rank)},
      {"GROUP_RANK", std::to_string(options.node_rank)},
      {"ROLE_RANK", std::to_string(rank)},  // one role: role ranks are global ranks
      {"ROLE_NAME", options.role},
      {"LOCAL_WORLD_SIZE", std::to_string(options.nproc_per_node)},
      {"WORLD_SIZE", world},
      {"GROUP_WORLD_SIZE", std::to_string(options.nnodes)},
      {"ROLE_WORLD_SIZE", world},
      {"MASTER_ADDR", rendezvous.master_addr},
      {"MASTER_PORT", std::to_string(rendezvous.master_port)},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(rendezvous.restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(options.max_restarts)},
      {"TORCHELASTIC_RUN_ID", rendezvous.run_id},
      {"TORCHELASTIC_USE_AGENT_STORE", "False"},  // Python's str(False): rank 0 hosts the store
  };
  env.insert(options.extra_environment.begin(), options.extra_environment.end());
  const char* nccl_async = variable("TORCH_NCCL_ASYNC_ERROR_HANDLING");
  env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = nccl_async != nullptr ? nccl_async : "1";
  if (const char* threads = variable("OMP_NUM_THREADS"))
    env["OMP_NUM_THREADS"] = threads;
  else if (sets_default_omp_threads(options))
    env["OMP_NUM_THREADS"] = std::string(1, '1');  // not = "1": GCC 12's -Wstringop-overflow
  return env;
}

}  // namespace ctrainer::launcher
