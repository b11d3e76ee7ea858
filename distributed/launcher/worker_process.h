#pragma once
/// \file One worker process of ctrainer-run: started in its own process group (so a terminal's
/// Ctrl-C reaches it once, through the launcher), with its streams optionally sent to files.
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ctrainer::launcher {

/// How to start one worker.
struct WorkerSpec {
  int64_t rank = 0;
  int64_t local_rank = 0;
  std::vector<std::string> command;                ///< program (looked up in PATH) and arguments
  std::map<std::string, std::string> environment;  ///< set on top of the launcher's environment
  std::string stdout_path;  ///< file for stdout; empty: the launcher's stdout
  std::string stderr_path;  ///< file for stderr; empty: the launcher's stderr
};

/// How a worker ended: its exit code, or the signal that killed it.
struct WorkerExit {
  int exit_code = 0;  ///< valid when signal == 0
  int signal = 0;     ///< the terminating signal, or 0
  bool succeeded() const { return signal == 0 && exit_code == 0; }
  /// The launcher's exit code for this outcome: the exit code, or 128 + signal.
  int shell_code() const { return signal != 0 ? 128 + signal : exit_code; }
  /// "exit code 3" or "killed by signal SIGKILL".
  std::string describe() const;
};

/// A started worker. Not copyable; the launcher waits for every worker it started.
class WorkerProcess {
 public:
  /// Forks and executes `spec.command`. Throws std::runtime_error when fork fails. A program
  /// that cannot be executed exits with code 127 after printing why.
  explicit WorkerProcess(const WorkerSpec& spec);
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  int64_t rank() const { return rank_; }
  int64_t local_rank() const { return local_rank_; }
  /// The outcome once the worker ended (after poll() or wait() saw it).
  const std::optional<WorkerExit>& exit() const { return exit_; }
  bool running() const { return !exit_.has_value(); }

  /// Non-blocking: records the outcome when the worker has ended. Returns running().
  bool poll();
  /// Sends `signal` to the worker's process group (the worker and its children).
  void signal(int signal) const;

 private:
  pid_t pid_ = -1;
  int64_t rank_ = 0;
  int64_t local_rank_ = 0;
  std::optional<WorkerExit> exit_;
};

/// The full path of `program` (searched in PATH when it has no '/'), or std::nullopt when no
/// executable file is found.
std::optional<std::string> find_executable(const std::string& program);

/// Why find_executable(program) found nothing, and what to do: a Python script (torchrun runs
/// those), a file in the current folder that PATH does not hold, a file without execute
/// permission, or no such file.
std::string why_not_executable(const std::string& program);

}  // namespace ctrainer::launcher
