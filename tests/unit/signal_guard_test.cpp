// SignalGuard: SIGTERM/SIGINT are recorded for the training loop; a second SIGINT exits at once.
// Preemption: one process stops on its own signal (the multi-process agreement is tested in
// tests/e2e/trainer_ddp_test.cpp).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctrainer/distributed/strategy.h>
#include <ctrainer/trainer/signals/preemption.h>
#include <ctrainer/trainer/signals/signal_guard.h>

namespace ctrainer {
namespace signal_guard_test {

TEST(SignalGuard, RecordsTheSignalAndRestoresTheOldHandler) {
  {
    SignalGuard guard;
    EXPECT_EQ(SignalGuard::pending(), 0);
    ::raise(SIGTERM);  // would kill the test process without the guard
    EXPECT_EQ(SignalGuard::pending(), SIGTERM);
  }
  struct sigaction now {};
  sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
  EXPECT_EQ(SignalGuard::exit_code(SIGTERM), 143);
  EXPECT_EQ(SignalGuard::exit_code(SIGINT), 130);
}

TEST(SignalGuard, SecondSigintExitsImmediatelyWith130) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    SignalGuard guard;
    ::raise(SIGINT);  // recorded
    ::raise(SIGINT);  // aborts
    ::_exit(0);       // not reached
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
}

TEST(Preemption, OneProcessStopsOnTheSignalItReceived) {
  SingleDeviceStrategy strategy;
  Preemption preemption(strategy, c10::Device(c10::kCPU));
  EXPECT_EQ(preemption.agreed_signal(), 0);
  ::raise(SIGINT);
  EXPECT_EQ(preemption.agreed_signal(), SIGINT);
  EXPECT_EQ(Preemption::name(SIGINT), "SIGINT");
  EXPECT_EQ(Preemption::name(SIGTERM), "SIGTERM");
  EXPECT_EQ(Preemption::name(10), "10");
}

}  // namespace signal_guard_test
}  // namespace ctrainer
