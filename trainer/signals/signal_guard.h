#pragma once
/// \file Catching SIGTERM / SIGINT during training so the Trainer can checkpoint and exit cleanly
/// (spot preemption, SLURM time limits, Ctrl-C).
#include <csignal>

namespace ctrainer {

/// While alive, SIGTERM and SIGINT only record that they arrived; the training loop polls
/// pending() at optimizer-step boundaries. A second SIGINT terminates at once (exit code 130).
/// The previous handlers are restored on destruction. Not reentrant: one guard at a time.
class SignalGuard {
 public:
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  /// The signal received (SIGTERM or SIGINT), or 0.
  static int pending();
  /// The conventional exit code of a process stopped by `signal`: 128 + signal.
  static int exit_code(int signal) { return 128 + signal; }

 private:
  struct sigaction previous_term_ {};
  struct sigaction previous_int_ {};
};

}  // namespace ctrainer
