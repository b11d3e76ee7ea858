#include <ctrainer/trainer/runtime/speed_metrics.h>

namespace ctrainer {

Metrics speed_metrics(const std::string& split, std::chrono::steady_clock::time_point start,
                      std::optional<double> num_samples, std::optional<double> num_steps,
                      std::optional<double> num_tokens) {
  const double runtime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Metrics out;
  out[split + "_runtime"] = runtime;
  if (runtime > 0) {
    if (num_samples) out[split + "_samples_per_second"] = *num_samples / runtime;
    if (num_steps) out[split + "_steps_per_second"] = *num_steps / runtime;
    if (num_tokens) out[split + "_tokens_per_second"] = *num_tokens / runtime;
  }
  return out;
}

}  // namespace ctrainer
