#pragma once
/// \file ScheduleOptions: the arguments of one learning-rate schedule (HF's
/// scheduler_specific_kwargs, given as --lr_scheduler_kwargs), read and checked against the
/// schedule they are for, with HF's defaults for the ones not given.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include <ctrainer/trainer/args/choices.h>

namespace ctrainer {

struct ScheduleOptions {
  /// Cosine waves over the decay (cosine, the min-lr cosines, warmup_stable_decay's cosine decay:
  /// 0.5; cosine_with_restarts: 1 hard restart cycle).
  double num_cycles = 0.5;
  double lr_end = 1e-7, power = 1.0;  ///< polynomial
  std::optional<double> timescale;    ///< inverse_sqrt; unset: num_warmup_steps or 10000
  /// cosine_with_min_lr / cosine_warmup_with_min_lr: the floor, absolute or as a fraction of the
  /// initial lr (exactly one of the two).
  std::optional<double> min_lr, min_lr_rate;
  std::optional<double> warmup_lr_rate;  ///< cosine_warmup_with_min_lr's warm-up start
  /// warmup_stable_decay: the phases' lengths (num_stable_steps unset: what the warm-up and
  /// the decay leave of the training steps), their shapes and the floor ratio.
  int64_t num_decay_steps = 0;
  std::optional<int64_t> num_stable_steps;
  std::string warmup_type = "linear", decay_type = "cosine";
  double min_lr_ratio = 0.0;
};

/// The options of schedule `type` from `kwargs` (a JSON object; null or {} gives the defaults).
/// Throws ArgumentError naming --lr_scheduler_kwargs and the key for a key the schedule does
/// not take (listing those it takes), a value of the wrong type, and the combinations HF
/// refuses (min_lr with min_lr_rate, neither for the min-lr cosines, warmup_stable_decay
/// without num_decay_steps, an unknown warmup_type / decay_type).
ScheduleOptions schedule_options(SchedulerType type, const nlohmann::json& kwargs);

}  // namespace ctrainer
