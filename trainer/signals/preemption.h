#pragma once
/// \file Preemption: SIGTERM / SIGINT during training, agreed on by every process, so that all of
/// them checkpoint the same optimizer step before they exit.
#include <string>

#include <c10/core/Device.h>

#include <ctrainer/trainer/signals/signal_guard.h>

namespace ctrainer {

class Strategy;

/// While alive, SIGTERM and SIGINT are caught (SignalGuard); the training loop asks
/// agreed_signal() after each optimizer step.
class Preemption {
 public:
  /// `strategy` (which must outlive this) agrees across processes; `device` is where its
  /// collectives run.
  Preemption(Strategy& strategy, c10::Device device);

  /// The signal to stop on after this step, or 0 to go on. A signal reaches the processes at
  /// slightly different moments, so with several processes it is agreed on (one one-element
  /// all-reduce): when any process got one, every process returns it (SIGTERM on those that got
  /// none) after the same step.
  int agreed_signal();

  /// "SIGTERM", "SIGINT", or the number.
  static std::string name(int signal);

 private:
  SignalGuard guard_;
  Strategy& strategy_;
  c10::Device device_;
};

}  // namespace ctrainer
