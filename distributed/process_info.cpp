#include <ctrainer/distributed/process_info.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/sagemaker_cluster.h>
#include <ctrainer/distributed/slurm_hostlist.h>
#include <ctrainer/integrations/sagemaker/sagemaker_parallelism.h>

namespace ctrainer {
namespace {

/// Typed access to the launch variables, with errors that name the variable.
class Variables {
 public:
  explicit Variables(const ProcessInfo::Lookup& lookup) : lookup_(lookup) {}

  bool has(const char* name) const { return lookup_(name).has_value(); }
  std::optional<std::string> text(const char* name) const { return lookup_(name); }

  int64_t integer(const char* name, int64_t fallback) const {
    const auto raw = lookup_(name);
    if (!raw) return fallback;
    try {
      size_t used = 0;
      const int64_t value = std::stoll(*raw, &used);
      if (used == raw->size()) return value;
    } catch (const std::exception&) {
    }
    throw ArgumentError(std::string("environment variable ") + name + "='" + *raw +
                        "' is not an integer; unset it or set it to the process's rank/size");
  }

 private:
  const ProcessInfo::Lookup& lookup_;
};

std::string rank_pair(const char* rank_name, int64_t rank, const char* size_name, int64_t size) {
  return std::string(rank_name) + "=" + std::to_string(rank) + " / " + size_name + "=" +
         std::to_string(size);
}

/// TORCHELASTIC_USE_AGENT_STORE as torchrun writes it: Python's str(True) / str(False). torch
/// reads anything but "True" as False; a value such as "1" or "true" is refused here instead,
/// because guessing wrong either makes rank 0 bind the agent's port or leaves nobody serving.
bool read_use_agent_store(const Variables& vars) {
  const auto raw = vars.text("TORCHELASTIC_USE_AGENT_STORE");
  if (!raw || *raw == "False") return false;
  if (*raw == "True") {
    for (const char* name : {"MASTER_ADDR", "MASTER_PORT"})
      if (!vars.has(name))
        throw ArgumentError(std::string("TORCHELASTIC_USE_AGENT_STORE=True but ") + name +
                            " is not set: the launcher's store is at MASTER_ADDR:MASTER_PORT. "
                            "Launch with torchrun (or ctrainer-run), or unset "
                            "TORCHELASTIC_USE_AGENT_STORE to let rank 0 host the store");
    return true;
  }
  throw ArgumentError("environment variable TORCHELASTIC_USE_AGENT_STORE='" + *raw +
                      "' must be True or False (Python's spelling, as torchrun writes it); "
                      "unset it unless a torchrun agent serves the store at "
                      "MASTER_ADDR:MASTER_PORT");
}

void read_torchrun(const Variables& vars, int64_t local_rank_flag, ProcessInfo& info) {
  info.world_size = vars.integer("WORLD_SIZE", 1);
  info.rank = vars.integer("RANK", 0);
  // torch.distributed.launch (without --use-env) passes --local_rank instead of LOCAL_RANK.
  info.local_rank = vars.integer("LOCAL_RANK", local_rank_flag >= 0 ? local_rank_flag : info.rank);
  info.local_world_size = vars.integer("LOCAL_WORLD_SIZE", info.world_size);
  info.node_rank =
      vars.integer("GROUP_RANK", info.rank / std::max<int64_t>(info.local_world_size, 1));
  info.use_agent_store = read_use_agent_store(vars);
}

void read_slurm(const Variables& vars, ProcessInfo& info) {
  info.rank = vars.integer("SLURM_PROCID", 0);
  info.world_size = vars.integer("SLURM_NTASKS", 1);
  info.local_rank = vars.integer("SLURM_LOCALID", 0);
  info.node_rank = vars.integer("SLURM_NODEID", 0);
  // Tasks on this node: the step's distribution ("2(x3),1") indexed by the node id.
  info.local_world_size = info.world_size;
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    if (const auto text = vars.text(name)) {
      std::vector<int64_t> counts;
      try {
        counts = expand_slurm_tasks_per_node(*text);
      } catch (const ArgumentError& error) {
        throw ArgumentError(std::string(name) + ": " + error.what());
      }
      if (info.node_rank >= 0 && info.node_rank < static_cast<int64_t>(counts.size()))
        info.local_world_size = counts[static_cast<size_t>(info.node_rank)];
      break;
    }
  }
  if (!info.master_addr) {
    // Rank 0 runs on the first node of the step.
    for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"}) {
      if (const auto list = vars.text(name)) {
        try {
          info.master_addr = first_slurm_host(*list);
        } catch (const ArgumentError& error) {
          throw ArgumentError(std::string(name) + ": " + error.what());
        }
        break;
      }
    }
  }
  if (!vars.has("MASTER_PORT")) {
    // Jobs sharing a node must not share a port: derive it from the job id (as Lightning does).
    const auto job = vars.text("SLURM_JOB_ID");
    if (job && job->find_first_not_of("0123456789") == std::string::npos)
      info.master_port = 15000 + std::stoi(job->size() > 4 ? job->substr(job->size() - 4) : *job);
  }
}

void read_openmpi(const Variables& vars, ProcessInfo& info) {
  info.rank = vars.integer("OMPI_COMM_WORLD_RANK", 0);
  info.world_size = vars.integer("OMPI_COMM_WORLD_SIZE", 1);
  info.local_rank = vars.integer("OMPI_COMM_WORLD_LOCAL_RANK", info.rank);
  info.local_world_size = vars.integer("OMPI_COMM_WORLD_LOCAL_SIZE", info.world_size);
  // mpirun's default by-slot mapping fills nodes in rank order.
  info.node_rank = (info.rank - info.local_rank) / std::max<int64_t>(info.local_world_size, 1);
}

/// SageMaker's data-parallel launch (mpirun, SMDATAPARALLEL_LOCAL_RANK) says neither the node
/// rank nor rank 0's host: they come from the cluster layout (SM_HOSTS, SM_CURRENT_HOST), as in
/// the toolkit's own launches. HF's TrainingArguments takes SMDATAPARALLEL_LOCAL_RANK as the
/// local rank; so does ctrainer, whichever launcher started the process.
void read_sagemaker(const ProcessInfo::Lookup& lookup, const Variables& vars, ProcessInfo& info) {
  info.sagemaker_data_parallel = read_sagemaker_parallelism(lookup).data_parallel;
  if (vars.has("SMDATAPARALLEL_LOCAL_RANK"))
    info.local_rank = vars.integer("SMDATAPARALLEL_LOCAL_RANK", info.local_rank);
  const auto cluster = read_sagemaker_cluster(lookup);
  if (!cluster || info.launched_by != LaunchEnvironment::kOpenMpi) return;
  if (!info.master_addr) info.master_addr = cluster->master_addr();
  info.node_rank = cluster->node_rank;
}

/// The names a launcher gives rank, world size, local rank and local world size: messages
/// name what the user set, not torchrun's equivalents.
struct RankNames {
  const char *rank, *world_size, *local_rank, *local_world_size;
};

RankNames rank_names(LaunchEnvironment launcher) {
  switch (launcher) {
    case LaunchEnvironment::kSlurm:
      return {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_TASKS_PER_NODE"};
    case LaunchEnvironment::kOpenMpi:
      return {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
              "OMPI_COMM_WORLD_LOCAL_SIZE"};
    case LaunchEnvironment::kSingleProcess:  // only --local_rank can be set
    case LaunchEnvironment::kTorchrun:
      break;
  }
  return {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
}

void validate(const ProcessInfo& info) {
  const char* source = to_string(info.launched_by);
  const RankNames n = rank_names(info.launched_by);
  if (info.launched_by == LaunchEnvironment::kSingleProcess && info.local_rank != 0)
    throw ArgumentError("--local_rank " + std::to_string(info.local_rank) +
                        " without a launcher: this is the only process of its node, whose local "
                        "rank is 0; start several processes with ctrainer-run or torchrun, or "
                        "drop --local_rank");
  if (info.world_size < 1 || info.rank < 0 || info.rank >= info.world_size)
    throw ArgumentError(rank_pair(n.rank, info.rank, n.world_size, info.world_size) + " (from " +
                        source + ") is inconsistent: need 0 <= " + n.rank + " < " + n.world_size);
  if (info.local_world_size < 1 || info.local_rank < 0 || info.local_rank >= info.local_world_size)
    throw ArgumentError(
        rank_pair(n.local_rank, info.local_rank, n.local_world_size, info.local_world_size) +
        " (from " + source + ") is inconsistent: need 0 <= " + n.local_rank + " < " +
        n.local_world_size);
  if (info.local_world_size > info.world_size)
    throw ArgumentError(
        rank_pair(n.local_world_size, info.local_world_size, n.world_size, info.world_size) +
        " (from " + source + "): a node cannot hold more processes than the job");
  if (info.node_rank < 0)
    throw ArgumentError("GROUP_RANK=" + std::to_string(info.node_rank) + " (from " + source +
                        ") must be >= 0");
  if (info.master_port < 1 || info.master_port > 65535)
    throw ArgumentError("MASTER_PORT=" + std::to_string(info.master_port) +
                        " must be a TCP port in [1, 65535]");
  if (info.restart_count < 0)
    throw ArgumentError("TORCHELASTIC_RESTART_COUNT=" + std::to_string(info.restart_count) +
                        " must be >= 0 (the launcher counts its restarts from 0)");
  if (info.master_addr && info.master_addr->empty())
    throw ArgumentError("MASTER_ADDR is empty; set it to the host of rank 0");
}

}  // namespace

const char* to_string(LaunchEnvironment environment) {
  switch (environment) {
    case LaunchEnvironment::kTorchrun:
      return "torchrun";
    case LaunchEnvironment::kSlurm:
      return "SLURM";
    case LaunchEnvironment::kOpenMpi:
      return "OpenMPI";
    case LaunchEnvironment::kSingleProcess:
      break;
  }
  return "single process";
}

std::string ProcessInfo::rendezvous_address() const {
  if (master_addr) return *master_addr;
  if (local_world_size == world_size) return "127.0.0.1";  // every rank is on this node
  throw ArgumentError("MASTER_ADDR is not set but the job spans several nodes (WORLD_SIZE=" +
                      std::to_string(world_size) +
                      ", LOCAL_WORLD_SIZE=" + std::to_string(local_world_size) +
                      "); export MASTER_ADDR=<host of rank 0> or launch with ctrainer-run");
}

std::string ProcessInfo::store_prefix() const {
  // Only the agent's store outlives an attempt. The store rank 0 hosts is new in every attempt,
  // and there the ranks' counts need not agree: torchrun counts restarts per node, so a node
  // that joins an elastic job later starts at 0 while the others count on.
  return use_agent_store ? "/worker/attempt_" + std::to_string(restart_count) : "/worker";
}

ProcessInfo ProcessInfo::from_variables(const Lookup& lookup, int64_t local_rank_flag) {
  const Variables vars(lookup);
  ProcessInfo info;
  info.master_addr = vars.text("MASTER_ADDR");
  const int64_t port = vars.integer("MASTER_PORT", 29500);
  if (port < 1 || port > 65535)
    throw ArgumentError("MASTER_PORT=" + std::to_string(port) +
                        " must be a TCP port in [1, 65535]");
  info.master_port = static_cast<int>(port);
  info.restart_count = vars.integer("TORCHELASTIC_RESTART_COUNT", 0);

  if (vars.has("RANK") || vars.has("WORLD_SIZE")) {
    info.launched_by = LaunchEnvironment::kTorchrun;
    read_torchrun(vars, local_rank_flag, info);
  } else if (vars.has("SLURM_PROCID") && vars.has("SLURM_NTASKS")) {
    info.launched_by = LaunchEnvironment::kSlurm;
    read_slurm(vars, info);
  } else if (vars.has("OMPI_COMM_WORLD_RANK") && vars.has("OMPI_COMM_WORLD_SIZE")) {
    info.launched_by = LaunchEnvironment::kOpenMpi;
    read_openmpi(vars, info);
  } else {
    // No launcher: one process; a LOCAL_RANK (or --local_rank) other than 0 is inconsistent.
    info.local_rank = vars.integer("LOCAL_RANK", local_rank_flag >= 0 ? local_rank_flag : 0);
    info.local_world_size = vars.integer("LOCAL_WORLD_SIZE", 1);
  }
  read_sagemaker(lookup, vars, info);
  validate(info);
  return info;
}

ProcessInfo ProcessInfo::from_environment(int64_t local_rank_flag) {
  return from_variables(
      [](const std::string& name) -> std::optional<std::string> {
        const char* raw = std::getenv(name.c_str());
        if (raw == nullptr || *raw == '\0') return std::nullopt;
        return std::string(raw);
      },
      local_rank_flag);
}

}  // namespace ctrainer
