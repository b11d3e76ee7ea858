#include <ctrainer/trainer/signals/signal_guard.h>

#include <unistd.h>

#include <atomic>

namespace ctrainer {
namespace {

std::atomic<int> g_pending{0};

extern "C" void on_stop_signal(int signal) {
  // Only async-signal-safe work here: an atomic store, or _exit on a second Ctrl-C.
  if (signal == SIGINT && g_pending.load() != 0) ::_exit(128 + SIGINT);
  g_pending.store(signal);
}

}  // namespace

SignalGuard::SignalGuard() {
  g_pending.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, &previous_term_);
  sigaction(SIGINT, &action, &previous_int_);
}

SignalGuard::~SignalGuard() {
  sigaction(SIGTERM, &previous_term_, nullptr);
  sigaction(SIGINT, &previous_int_, nullptr);
}

int SignalGuard::pending() {
  return g_pending.load();
}

}  // namespace ctrainer
