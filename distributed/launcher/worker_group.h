#pragma once
/// \file A node's worker group, started, watched and stopped together (torchrun's local agent's
/// worker group): what ctrainer-run's static supervisor and its elastic agent both run, and how
/// the launcher's own signals reach the workers.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/distributed/launcher/launch_options.h>
#include <ctrainer/distributed/launcher/log_tail.h>
#include <ctrainer/distributed/launcher/worker_environment.h>
#include <ctrainer/distributed/launcher/worker_process.h>

namespace ctrainer::launcher {

/// Writes "[ctrainer-run] <text>" to stderr.
void say(const std::string& text);

/// "SIGTERM" for SIGTERM, the number for a signal without a name.
std::string signal_name(int signal);

/// While alive, SIGTERM, SIGINT, SIGHUP and SIGQUIT sent to the launcher only count (signals
/// received()); the previous handlers come back afterwards.
class SignalCatcher {
 public:
  SignalCatcher();
  ~SignalCatcher();
  SignalCatcher(const SignalCatcher&) = delete;
  SignalCatcher& operator=(const SignalCatcher&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

/// How many of those signals the launcher received so far, and the last one.
int signals_received();
int last_signal();

/// A port that was free a moment ago on `address` (an IPv4 address of this machine).
int pick_free_port(const std::string& address = "127.0.0.1");

/// Before the first worker group: refuses a program that cannot be executed (ArgumentError),
/// creates --log-dir or a temporary folder when streams go to files (and says where), says when
/// OMP_NUM_THREADS is set to 1 for the workers. Returns the log folder, if any.
std::optional<std::filesystem::path> prepare_workers(const LaunchOptions& options);

/// Why a worker group ended.
enum class GroupEnd {
  kSucceeded,          ///< every worker exited with 0
  kWorkerFailed,       ///< a worker failed; the others were stopped
  kSignalled,          ///< the launcher received a signal and forwarded it
  kMembershipChanged,  ///< the caller's check said so; the workers were sent SIGTERM
};

struct GroupResult {
  GroupEnd end = GroupEnd::kSucceeded;
  int exit_code = 0;  ///< the failed worker's (or lowest failed rank's) shell code; 0 otherwise
};

/// The workers of one attempt on this node: options.nproc_per_node processes with ranks
/// options.node_rank * nproc_per_node + local rank in a world of options.world_size(), their
/// logs under <log dir>/attempt_<attempt>/<local rank>/ when streams go to files.
class WorkerGroup {
 public:
  WorkerGroup(const LaunchOptions& options, const Rendezvous& rendezvous,
              const std::optional<std::filesystem::path>& log_dir, int64_t attempt);
  ~WorkerGroup();
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  /// Watches the workers until the group ends: a failed worker (reported, the others stopped),
  /// all succeeded, a launcher signal (forwarded; `signals_seen` is signals_received() when the
  /// group started), or `membership_changed` returning true (checked every monitor interval;
  /// the workers get SIGTERM, then SIGKILL after --grace-period).
  GroupResult watch(int signals_seen, const std::function<bool()>& membership_changed = {});

 private:
  void stop(int signal);
  bool any_running() const;
  int status() const;

  const LaunchOptions options_;  // a copy: an elastic agent makes one per round
  std::vector<std::unique_ptr<WorkerProcess>> workers_;
  std::vector<LogTail> tails_;
};

}  // namespace ctrainer::launcher
