#pragma once
/// \file The command line of `ctrainer-run`: torchrun's flags (dash or underscore spelling)
/// followed by the program to start and its arguments.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <ctrainer/distributed/sagemaker_cluster.h>

namespace ctrainer::launcher {

/// Which standard streams of a worker go to a file (torchrun's Std: 0 none, 1 stdout,
/// 2 stderr, 3 both).
enum StdStreams : unsigned { kNoStreams = 0, kStdout = 1, kStderr = 2, kBothStreams = 3 };

/// Everything ctrainer-run was asked to do.
struct LaunchOptions {
  /// --nnodes: the node count (static rendezvous), or the largest one (c10d rendezvous, where
  /// each round has between min_nodes and max_nodes nodes and sets it for its workers).
  int64_t nnodes = 1;
  int64_t min_nodes = 1;  ///< --nnodes MIN:MAX's MIN (= nnodes for a fixed count)
  int64_t max_nodes = 1;  ///< --nnodes MIN:MAX's MAX (= nnodes for a fixed count)
  /// --rdzv-backend: "static" (ctrainer-run: --node-rank and --master-addr fix the layout) or
  /// "c10d" (ctrainer-run-elastic: nodes join rounds on a TCPStore at --rdzv-endpoint).
  std::string rdzv_backend = "static";
  /// --rdzv-conf is_host: whether this node serves the c10d rendezvous store (unset: when the
  /// endpoint's host is an address of this machine).
  std::optional<bool> rdzv_is_host;
  double rdzv_last_call_timeout_s = 30;  ///< --rdzv-conf last_call_timeout (torch's default)
  double rdzv_join_timeout_s = 600;      ///< --rdzv-conf join_timeout (torch's default)
  /// --local-addr: the address the other nodes reach this one at (c10d rendezvous; default: the
  /// address this machine uses to reach the rendezvous endpoint).
  std::optional<std::string> local_addr;
  int64_t nproc_per_node = 1;             ///< --nproc-per-node (a number, or cpu / gpu / auto)
  int64_t node_rank = 0;                  ///< --node-rank
  std::string master_addr = "127.0.0.1";  ///< --master-addr, or the host of --rdzv-endpoint
  int master_port = 29500;                ///< --master-port, or the port of --rdzv-endpoint
  bool standalone = false;                ///< --standalone: one node, a free port on 127.0.0.1
  int64_t max_restarts = 0;               ///< --max-restarts
  std::string run_id = "none";            ///< --rdzv-id (TORCHELASTIC_RUN_ID)
  std::string role = "default";           ///< --role (ROLE_NAME)
  std::vector<unsigned> redirects;        ///< per local rank: streams written to files
  std::vector<unsigned> tee;              ///< per local rank: streams written to files and console
  std::optional<std::string> log_dir;     ///< --log-dir (a temporary folder when needed)
  /// --local-ranks-filter: local ranks whose output reaches the console (all when unset).
  std::optional<std::set<int64_t>> local_ranks_filter;
  double monitor_interval_s = 0.1;  ///< --monitor-interval: how often workers are checked
  /// --grace-period: seconds between SIGTERM and SIGKILL when stopping workers (torchrun: 30).
  double grace_period_s = 30;
  std::vector<std::string> command;  ///< the program and its arguments
  /// Variables every worker gets besides torchrun's: those of --config_file (accelerate's
  /// ACCELERATE_USE_CPU, ACCELERATE_MIXED_PRECISION, CUDA_VISIBLE_DEVICES).
  std::map<std::string, std::string> extra_environment;

  int64_t world_size() const { return nnodes * nproc_per_node; }
  /// The c10d rendezvous: node ranks and counts come from the rounds (ctrainer-run-elastic).
  bool elastic() const { return rdzv_backend == "c10d"; }
  /// Streams of `local_rank` that go to files: redirected or tee'd (tee implies the file).
  unsigned file_streams(int64_t local_rank) const;
  /// Whether `local_rank` may write to the console (--local-ranks-filter).
  bool shown_on_console(int64_t local_rank) const;
};

/// The outcome of parsing: options to run, or a text to print (--help) with exit code 0.
struct ParsedCommandLine {
  std::optional<LaunchOptions> options;
  std::string help;
};

/// The launcher's own environment as an EnvironmentLookup (unset and empty variables are absent).
std::optional<std::string> launcher_environment(const std::string& name);

/// Parses `ctrainer-run [options] program [program args...]`. Options stop at the first
/// argument that is not an option (or after `--`); everything from there belongs to the program.
/// On SageMaker (SM_HOSTS, SM_CURRENT_HOST in `environment`) --nnodes, --node-rank,
/// --master-addr and --nproc-per-node default to the cluster's layout (read_sagemaker_cluster).
/// --config_file reads an accelerate config file (read_accelerate_config): its num_machines,
/// machine_rank, main_process_ip, main_process_port and num_processes / num_machines fill the
/// flags not given (a flag given wins, as accelerate launch's flags win over its file).
/// Throws ArgumentError (naming the flag or variable and the fix) for bad input.
ParsedCommandLine parse_launch_command_line(const std::vector<std::string>& arguments,
                                            const EnvironmentLookup& environment);

/// torchrun's Std syntax: "3" for every local rank, or "0:1,2:3" per local rank (others 0).
std::vector<unsigned> parse_std_streams(const std::string& flag, const std::string& value,
                                        int64_t nproc_per_node);

}  // namespace ctrainer::launcher
