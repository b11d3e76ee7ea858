#pragma once
/// \file Child processes of scenarios that run other programs (vs_hf runs run_glue and Python
/// scripts): started with posix_spawn, output captured to files, reaped with wait4 so that the
/// child's own peak RSS (ru_maxrss) comes back with its exit status.
#include <cstdint>
#include <string>
#include <vector>

namespace ctrainer::bench {

/// What to start.
struct ChildSpec {
  std::vector<std::string> argv;  ///< argv[0] is the program's path (no PATH search)
  /// NAME=VALUE entries added to this process's environment; they replace inherited variables
  /// of the same name.
  std::vector<std::string> env;
  std::string stdout_path;     ///< the child's stdout goes to this file (truncated)
  std::string stderr_path;     ///< the child's stderr goes to this file (truncated)
  double timeout_seconds = 0;  ///< > 0: SIGKILL the child after this long
};

/// How it ended.
struct ChildResult {
  int exit_code = -1;          ///< exit status, or -1 when it ended by a signal
  int term_signal = 0;         ///< the signal that ended it, 0 when it exited
  bool timed_out = false;      ///< killed after ChildSpec::timeout_seconds
  double spawn_unix_time = 0;  ///< wall clock (seconds since the epoch) right before the spawn
  double wall_seconds = 0;     ///< spawn to reaped
  int64_t max_rss_kb = 0;      ///< the child's peak resident set size (wait4's ru_maxrss, KiB)

  bool ok() const { return exit_code == 0; }
  /// "exit status 3", "killed by signal 9", "timed out after 600 s (killed)".
  std::string describe(double timeout_seconds) const;
};

/// Starts the child and waits for it. Throws std::runtime_error when it cannot be started (the
/// program or an output file cannot be opened); a child that fails is reported in the result.
ChildResult run_child(const ChildSpec& spec);

/// The last `max_lines` lines of a text file (at most 8 KiB of it); "" when unreadable.
std::string file_tail(const std::string& path, int max_lines);

/// Seconds since the epoch, as Python's time.time() (the same clock the children report).
double unix_time_now();

/// This process's environment (NAME=VALUE entries) with `entries` appended: an inherited
/// variable is left out when an entry sets the same name or when its name is in `dropped`.
std::vector<std::string> environment_with(const std::vector<std::string>& entries,
                                          const std::vector<std::string>& dropped = {});

}  // namespace ctrainer::bench
