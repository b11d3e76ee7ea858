#pragma once
/// \file Multi-process scenarios (ddp, sharding): the parent re-executes this binary as worker
/// processes with torchrun's environment on one node; each worker writes its measurements as
/// JSON to PREFIX.RANK.json, where PREFIX is the value of the scenario's worker variable.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer::bench {

/// How to start the workers of one multi-process run.
struct WorkerLaunch {
  std::string scenario;    ///< argv[1] of the workers (the scenario that runs them)
  std::string worker_env;  ///< set to the report prefix; its presence makes a process a worker
  int world = 2;           ///< processes; 1 starts a single process without torchrun variables
  /// Extra NAME=VALUE entries; they replace inherited variables of the same name.
  std::vector<std::string> env;
};

/// Launches the workers, waits for all of them and returns their reports by rank, each with
/// "max_rss_bytes" added: the process's peak resident set (wait4's ru_maxrss). When one
/// fails the others are stopped (they would wait for it until the collective timeout) and this
/// throws, naming the failed rank (its error is on stderr).
std::vector<nlohmann::json> run_workers(const WorkerLaunch& launch);

/// The 1-minute load average (/proc/loadavg), to show how quiet the machine was.
double load_average();

}  // namespace ctrainer::bench
