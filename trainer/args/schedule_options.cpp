#include <ctrainer/trainer/args/schedule_options.h>

#include <cmath>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>

namespace ctrainer {

namespace {

using nlohmann::json;

/// The keys HF's schedule function of `type` takes besides the optimizer and the step counts.
std::vector<std::string> accepted_keys(SchedulerType type) {
  switch (type) {
    case SchedulerType::kCosine:
    case SchedulerType::kCosineWithRestarts:
      return {"num_cycles"};
    case SchedulerType::kPolynomial:
      return {"lr_end", "power"};
    case SchedulerType::kInverseSqrt:
      return {"timescale"};
    case SchedulerType::kCosineWithMinLr:
      return {"num_cycles", "min_lr", "min_lr_rate"};
    case SchedulerType::kCosineWarmupWithMinLr:
      return {"num_cycles", "min_lr", "min_lr_rate", "warmup_lr_rate"};
    case SchedulerType::kWarmupStableDecay:
      return {"num_decay_steps", "num_stable_steps", "warmup_type",
              "decay_type",      "min_lr_ratio",     "num_cycles"};
    default:
      return {};
  }
}

std::string where(const std::string& key) {
  return "--lr_scheduler_kwargs \"" + key + "\"";
}

double number(const json& v, const std::string& key) {
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw ArgumentError(where(key) + " must be a number, got " + v.dump());
  return v.get<double>();
}

int64_t count(const json& v, const std::string& key) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    throw ArgumentError(where(key) + " must be a whole number of steps >= 0, got " + v.dump());
  return v.get<int64_t>();
}

std::string shape(const json& v, const std::string& key) {
  if (!v.is_string() || (v != "linear" && v != "cosine" && v != "1-sqrt"))
    throw ArgumentError(where(key) + " must be \"linear\", \"cosine\" or \"1-sqrt\", got " +
                        v.dump());
  return v.get<std::string>();
}

}  // namespace

ScheduleOptions schedule_options(SchedulerType type, const json& kwargs) {
  ScheduleOptions o;
  if (type == SchedulerType::kCosineWithRestarts) o.num_cycles = 1;
  // (null: no arguments, which the min-lr cosines and warmup_stable_decay still refuse below)
  const json given = kwargs.is_null() ? json::object() : kwargs;
  if (!given.is_object())
    throw ArgumentError("--lr_scheduler_kwargs must be a JSON object, got " + kwargs.dump());
  const std::vector<std::string> accepted = accepted_keys(type);
  for (const auto& [key, value] : given.items()) {
    bool known = false;
    for (const auto& name : accepted) known = known || name == key;
    if (!known) {
      std::string listed;
      for (const auto& name : accepted) listed += (listed.empty() ? "" : ", ") + name;
      throw ArgumentError(where(key) + ": the " + to_string(type) + " schedule " +
                          (accepted.empty() ? "takes no arguments" : "takes " + listed + " only"));
    }
    if (key == "num_cycles") {
      o.num_cycles = number(value, key);
    } else if (key == "lr_end") {
      o.lr_end = number(value, key);
    } else if (key == "power") {
      o.power = number(value, key);
    } else if (key == "timescale") {
      if (!value.is_null()) o.timescale = static_cast<double>(count(value, key));
      if (o.timescale && *o.timescale == 0)
        throw ArgumentError(where(key) + " must be > 0 (it divides the step)");
    } else if (key == "min_lr" || key == "min_lr_rate" || key == "warmup_lr_rate") {
      auto& target = key == "min_lr"        ? o.min_lr
                     : key == "min_lr_rate" ? o.min_lr_rate
                                            : o.warmup_lr_rate;
      if (!value.is_null()) target = number(value, key);
    } else if (key == "num_decay_steps") {
      o.num_decay_steps = count(value, key);
    } else if (key == "num_stable_steps") {
      if (!value.is_null()) o.num_stable_steps = count(value, key);
    } else if (key == "warmup_type") {
      o.warmup_type = shape(value, key);
    } else if (key == "decay_type") {
      o.decay_type = shape(value, key);
    } else if (key == "min_lr_ratio") {
      o.min_lr_ratio = number(value, key);
    }
  }
  if (type == SchedulerType::kCosineWithMinLr || type == SchedulerType::kCosineWarmupWithMinLr) {
    if (o.min_lr && o.min_lr_rate)
      throw ArgumentError("--lr_scheduler_kwargs: give min_lr or min_lr_rate, not both");
    if (!o.min_lr && !o.min_lr_rate)
      throw ArgumentError("--lr_scheduler_kwargs: the " + to_string(type) +
                          " schedule needs min_lr or min_lr_rate, e.g. '{\"min_lr_rate\": 0.1}'");
  }
  if (type == SchedulerType::kWarmupStableDecay && !given.contains("num_decay_steps"))
    throw ArgumentError(
        "--lr_scheduler_kwargs: the warmup_stable_decay schedule needs num_decay_steps, e.g. "
        "'{\"num_decay_steps\": 100}'");
  return o;
}

}  // namespace ctrainer
