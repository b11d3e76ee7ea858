#include <ctrainer/trainer/signals/preemption.h>

#include <csignal>

#include <ATen/ATen.h>

#include <ctrainer/distributed/strategy.h>

namespace ctrainer {

Preemption::Preemption(Strategy& strategy, c10::Device device)
    : strategy_(strategy), device_(device) {}

int Preemption::agreed_signal() {
  const int local = SignalGuard::pending();
  if (strategy_.world_size() == 1) return local;
  // The checkpoint written on the way out is collective: every process must stop after the same
  // step.
  const at::Tensor flag = at::full({1}, local != 0 ? 1.0f : 0.0f,
                                   at::TensorOptions().device(device_).dtype(at::kFloat));
  if (strategy_.any_across_processes(flag).item<float>() == 0.0f) return 0;
  return local != 0 ? local : SIGTERM;
}

std::string Preemption::name(int signal) {
  return signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : std::to_string(signal);
}

}  // namespace ctrainer
