#pragma once
/// \file HF's speed_metrics: runtime and throughput of a split.
#include <chrono>
#include <optional>
#include <string>

#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer {

/// {split}_runtime (s), {split}_samples_per_second, {split}_steps_per_second and
/// {split}_tokens_per_second (of those given) since `start`.
Metrics speed_metrics(const std::string& split, std::chrono::steady_clock::time_point start,
                      std::optional<double> num_samples, std::optional<double> num_steps,
                      std::optional<double> num_tokens = std::nullopt);

}  // namespace ctrainer
