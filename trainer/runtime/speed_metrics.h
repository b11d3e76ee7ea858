#pragma once
/// \file HF's speed_metrics: runtime and throughput of a split.
#include <chrono>
#include <optional>
#include <string>

#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer {

/// {split}_runtime (s), {split}_samples_per_second and {split}_steps_per_second since `start`.
Metrics speed_metrics(const std::string& split, std::chrono::steady_clock::time_point start,
                      std::optional<double> num_samples, std::optional<double> num_steps);

}  // namespace ctrainer
