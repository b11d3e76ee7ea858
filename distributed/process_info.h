#pragma once
/// \file Who this process is in a (possibly multi-process) job, read from the launch
/// environment. Single-process runs get rank 0 of 1.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace ctrainer {

/// The launcher whose environment variables described this process.
enum class LaunchEnvironment {
  kSingleProcess,  ///< no launcher variables: rank 0 of 1
  kTorchrun,       ///< RANK / WORLD_SIZE (torchrun, ctrainer-run, torch.distributed.launch)
  kSlurm,          ///< SLURM_PROCID / SLURM_NTASKS (srun)
  kOpenMpi,        ///< OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE (mpirun)
};

/// "single process", "torchrun", "SLURM" or "OpenMPI" (for messages).
const char* to_string(LaunchEnvironment environment);

/// Rank information of the current process.
struct ProcessInfo {
  int64_t rank = 0;              ///< global rank (RANK)
  int64_t world_size = 1;        ///< number of processes (WORLD_SIZE)
  int64_t local_rank = 0;        ///< rank on this node (LOCAL_RANK); also the CUDA device index
  int64_t local_world_size = 1;  ///< processes on this node (LOCAL_WORLD_SIZE)
  int64_t node_rank = 0;         ///< index of this node (GROUP_RANK)
  /// Host of the rendezvous store (MASTER_ADDR). Unset when no launcher gave one; see
  /// rendezvous_address().
  std::optional<std::string> master_addr;
  int master_port = 29500;  ///< port of the rendezvous store (MASTER_PORT)
  /// How often the launcher restarted the job (TORCHELASTIC_RESTART_COUNT), 0 on the first try.
  int64_t restart_count = 0;
  /// TORCHELASTIC_USE_AGENT_STORE=True (torchrun): the launcher's elastic agent already serves
  /// the rendezvous store at MASTER_ADDR:MASTER_PORT, so every rank, rank 0 included, connects
  /// to it as a client. False or unset (ctrainer-run, SLURM, OpenMPI): rank 0 hosts the store.
  /// Only read in torchrun's environment (RANK / WORLD_SIZE), where torch reads it too.
  bool use_agent_store = false;
  LaunchEnvironment launched_by = LaunchEnvironment::kSingleProcess;
  /// SM_FRAMEWORK_PARAMS asks for smdistributed's data parallelism (transformers'
  /// is_sagemaker_dp_enabled). HF's Trainer then runs DDP over the mpirun ranks on SageMaker's
  /// "smddp" backend; ctrainer runs the same DDP on NCCL (GPU) or Gloo (CPU), which needs no
  /// SageMaker library, and says so in its log.
  bool sagemaker_data_parallel = false;

  bool is_world_process_zero() const { return rank == 0; }
  bool is_local_process_zero() const { return local_rank == 0; }
  bool is_distributed() const { return world_size > 1; }

  /// The key prefix of this attempt in the rendezvous store. In the agent's store
  /// (use_agent_store) "/worker/attempt_<restart_count>": it outlives a restart of the workers,
  /// so an attempt must not read the keys of the one before (the peers' old Gloo addresses); the
  /// name is the one torch's `_create_c10d_store` used for it. Else "/worker": rank 0's store is
  /// new in every attempt, and the ranks of an elastic job count their restarts per node.
  std::string store_prefix() const;

  /// MASTER_ADDR, or 127.0.0.1 when it is unset and every rank runs on this node. Throws
  /// ArgumentError when it is unset in a multi-node job (nobody can guess rank 0's host).
  std::string rendezvous_address() const;

  /// Reads the launch environment of this process; `local_rank_flag` is --local_rank
  /// (-1: not given). Precedence: torchrun variables (RANK + WORLD_SIZE) > SLURM
  /// (SLURM_PROCID + SLURM_NTASKS) > OpenMPI (OMPI_COMM_WORLD_RANK + _SIZE) > single process.
  /// LOCAL_RANK from the environment wins over --local_rank (as in HF's TrainingArguments), and
  /// SageMaker's SMDATAPARALLEL_LOCAL_RANK over both; under OpenMPI on SageMaker (its
  /// data-parallel launch) the node rank and MASTER_ADDR default to the cluster layout
  /// (read_sagemaker_cluster: SM_HOSTS, SM_CURRENT_HOST, SM_CURRENT_INSTANCE_GROUP).
  /// Throws ArgumentError when a variable is not an integer or ranks are inconsistent, and when
  /// SM_FRAMEWORK_PARAMS or SM_HP_MP_PARAMETERS is JSON that transformers' rules cannot read
  /// (read_sagemaker_parallelism).
  static ProcessInfo from_environment(int64_t local_rank_flag = -1);

  /// Looks a variable up; std::nullopt when unset or empty.
  using Lookup = std::function<std::optional<std::string>(const std::string& name)>;
  /// from_environment() with the variables supplied by `lookup` (testable without setenv).
  static ProcessInfo from_variables(const Lookup& lookup, int64_t local_rank_flag = -1);
};

}  // namespace ctrainer
