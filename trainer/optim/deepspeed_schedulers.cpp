// DeepSpeed's schedulers. Every formula keeps lr_schedules.py's operation order (DeepSpeed
// 0.19.8), so the lrs are bit-identical to Python's floats; tests/parity/
// deepspeed_schedulers_parity.py checks that against DeepSpeed itself.
#include <ctrainer/trainer/optim/deepspeed_schedulers.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numbers>
#include <utility>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/logging.h>
#include <ctrainer/trainer/optim/deepspeed_params.h>

namespace ctrainer {
namespace {

// DeepSpeed sets beta2 to this whenever OneCycle cycles momentum (`(mom, 0.99)` tuples).
constexpr double kOneCycleBeta2 = 0.99;

void check_warmup_num_steps(int64_t steps, const std::string& where) {
  // DeepSpeed: `if not isinstance(warmup_num_steps, int) or warmup_num_steps <= 0: raise`.
  if (steps <= 0) {
    throw ArgumentError(where + ".warmup_num_steps must be a positive integer, got " +
                        std::to_string(steps) + " (DeepSpeed uses at least 2 warm-up steps)");
  }
}

// The betas of a param group, when its optimizer has any (DeepSpeed checks
// `'betas' in optimizer.defaults`).
bool has_betas(torch::optim::OptimizerOptions& options) {
  return dynamic_cast<torch::optim::AdamOptions*>(&options) != nullptr ||
         dynamic_cast<torch::optim::AdamWOptions*>(&options) != nullptr;
}

void set_betas(torch::optim::OptimizerOptions& options, double beta1, double beta2) {
  if (auto* adam = dynamic_cast<torch::optim::AdamOptions*>(&options)) {
    adam->betas(std::make_tuple(beta1, beta2));
  } else if (auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&options)) {
    adamw->betas(std::make_tuple(beta1, beta2));
  }
}

}  // namespace

// ---- DeepSpeedScheduler ---------------------------------------------------------------------

DeepSpeedScheduler::DeepSpeedScheduler(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                       int64_t last_batch_iteration)
    : LRScheduler(std::move(optimizer)) {
  if (last_batch_iteration < -1) {
    throw ArgumentError("scheduler.params.last_batch_iteration must be >= -1, got " +
                        std::to_string(last_batch_iteration));
  }
  set_last_epoch(last_batch_iteration);
}

std::vector<double> DeepSpeedScheduler::per_group(std::vector<double> values,
                                                  const std::string& name) const {
  const size_t groups = optimizer()->param_groups().size();
  if (values.size() == 1 && groups != 1) values.assign(groups, values.front());
  if (values.size() != groups) {
    throw ArgumentError("scheduler.params." + name + ": expected " + std::to_string(groups) +
                        " values (one per param group), got " + std::to_string(values.size()));
  }
  return values;
}

void DeepSpeedScheduler::apply(int64_t last_batch_iteration) {
  set_group_lrs(lrs_at(last_batch_iteration));
}

void DeepSpeedScheduler::step() {
  set_last_epoch(last_epoch() + 1);
  apply(last_epoch());
}

nlohmann::json DeepSpeedScheduler::state_dict() const {
  return nlohmann::json{
      {"type", type()}, {"last_batch_iteration", last_epoch()}, {"last_lr", get_last_lr()}};
}

void DeepSpeedScheduler::load_state_dict(const nlohmann::json& state) {
  const std::string where = "lr scheduler state (DeepSpeed " + type() + ")";
  if (!state.is_object()) throw ArgumentError(where + ": expected a JSON object");
  if (state.contains("type") && state["type"] != type()) {
    throw ArgumentError(where + ": the checkpoint holds the state of " + state["type"].dump() +
                        "; resume with the same DeepSpeed \"scheduler\" section it was saved with");
  }
  if (!state.contains("last_batch_iteration") ||
      !state["last_batch_iteration"].is_number_integer()) {
    throw ArgumentError(where + ": 'last_batch_iteration' is missing or not an integer" +
                        (state.contains("last_epoch")
                             ? " (this is the state of a --lr_scheduler_type scheduler)"
                             : ""));
  }
  const auto iteration = state["last_batch_iteration"].get<int64_t>();
  // (At most 2^53: the count comes from a file, and step() adds 1 to it.)
  if (iteration < -1 || iteration > (int64_t{1} << 53)) {
    throw ArgumentError(where + ": 'last_batch_iteration' must be in [-1, 2^53], got " +
                        state["last_batch_iteration"].dump());
  }
  // DeepSpeed restores only last_batch_iteration and relies on the optimizer's saved param
  // groups for the current lr; re-applying gives the same values without depending on them.
  set_last_epoch(iteration);
  apply(iteration);
}

// ---- WarmupLR / WarmupDecayLR ---------------------------------------------------------------

WarmupLR::WarmupLR(std::shared_ptr<torch::optim::Optimizer> optimizer,
                   const WarmupLROptions& options)
    : DeepSpeedScheduler(std::move(optimizer), options.last_batch_iteration) {
  check_warmup_num_steps(options.warmup_num_steps, "scheduler.params");
  min_lrs_ = per_group(options.warmup_min_lr, "warmup_min_lr");
  // DeepSpeed: warmup_max_lr=None means each group's current lr.
  const auto max_lrs = options.warmup_max_lr.empty()
                           ? base_lrs()
                           : per_group(options.warmup_max_lr, "warmup_max_lr");
  for (size_t i = 0; i < max_lrs.size(); ++i) delta_lrs_.push_back(max_lrs[i] - min_lrs_[i]);
  warmup_num_steps_ = std::max<int64_t>(2, options.warmup_num_steps);
  warmup_type_ = options.warmup_type;
  inverse_log_warm_up_ = 1.0 / std::log(static_cast<double>(warmup_num_steps_));
  if (options.last_batch_iteration == -1) apply(-1);
}

double WarmupLR::warmup_gamma(int64_t i) const {
  if (warmup_type_ == WarmupType::kLog) {
    return inverse_log_warm_up_ * std::log(static_cast<double>(i + 1));
  }
  return static_cast<double>(i) / static_cast<double>(warmup_num_steps_);
}

double WarmupLR::gamma(int64_t i) const {
  if (i < warmup_num_steps_) return warmup_gamma(i);
  return 1.0;
}

std::vector<double> WarmupLR::lrs_at(int64_t i) const {
  if (i < 0) return min_lrs_;  // before the first step()
  const double g = gamma(i);
  std::vector<double> lrs(min_lrs_.size());
  for (size_t k = 0; k < lrs.size(); ++k) lrs[k] = min_lrs_[k] + (delta_lrs_[k] * g);
  return lrs;
}

WarmupDecayLR::WarmupDecayLR(std::shared_ptr<torch::optim::Optimizer> optimizer,
                             int64_t total_num_steps, const WarmupLROptions& options)
    // WarmupLR's constructor applies the lrs of iteration -1 (warmup_min_lr), which do not
    // depend on total_num_steps, as in DeepSpeed where the subclass is not yet complete either.
    : WarmupLR(std::move(optimizer), options), total_num_steps_(total_num_steps) {
  if (total_num_steps_ < warmup_num_steps_) {
    logging::logger()->warn("WarmupDecayLR: total_num_steps {} is less than warmup_num_steps {}",
                            total_num_steps_, warmup_num_steps_);
  }
}

double WarmupDecayLR::gamma(int64_t i) const {
  if (i < warmup_num_steps_) return warmup_gamma(i);
  return std::max(0.0,
                  static_cast<double>(total_num_steps_ - i) /
                      std::max(1.0, static_cast<double>(total_num_steps_ - warmup_num_steps_)));
}

// ---- WarmupCosineLR -----------------------------------------------------------------------

WarmupCosineLR::WarmupCosineLR(std::shared_ptr<torch::optim::Optimizer> optimizer,
                               const WarmupCosineLROptions& options)
    : DeepSpeedScheduler(std::move(optimizer), options.last_batch_iteration), options_(options) {
  check_warmup_num_steps(options.warmup_num_steps, "scheduler.params");
  options_.warmup_num_steps = std::max<int64_t>(2, options.warmup_num_steps);
  inverse_log_warm_up_ = 1.0 / std::log(static_cast<double>(options_.warmup_num_steps));
  if (options_.total_num_steps < options_.warmup_num_steps) {
    logging::logger()->warn("WarmupCosineLR: total_num_steps {} is less than warmup_num_steps {}",
                            options_.total_num_steps, options_.warmup_num_steps);
  }
  org_lrs_ = base_lrs();
  if (options.last_batch_iteration == -1) apply(-1);
}

double WarmupCosineLR::lr_ratio(int64_t i) const {
  if (i < 0) return 0.0;
  const int64_t warm = options_.warmup_num_steps;
  if (i < warm) {
    double ratio = options_.warmup_type == WarmupType::kLog
                       ? inverse_log_warm_up_ * std::log(static_cast<double>(i + 1))
                       : static_cast<double>(i) / static_cast<double>(warm);
    const double ratio_delta = 1. - options_.warmup_min_ratio;
    return options_.warmup_min_ratio + ratio * ratio_delta;
  }
  const int64_t real_last_step = i - warm + 1;
  const int64_t real_total_steps = std::max<int64_t>(1, options_.total_num_steps - warm);
  // DeepSpeed clamps the progress so the ratio stays at cos_min_ratio past the end.
  const double progress =
      std::min(1.0, static_cast<double>(real_last_step) / static_cast<double>(real_total_steps));
  const double ratio_delta = 1. - options_.cos_min_ratio;
  const double ratio = (1 + std::cos(std::numbers::pi * progress)) / 2;
  return std::max(0.0, options_.cos_min_ratio + ratio_delta * ratio);
}

std::vector<double> WarmupCosineLR::lrs_at(int64_t i) const {
  if (i < 0) return std::vector<double>(org_lrs_.size(), 0.0);
  const double ratio = lr_ratio(i);
  std::vector<double> lrs(org_lrs_.size());
  for (size_t k = 0; k < lrs.size(); ++k) lrs[k] = org_lrs_[k] * ratio;
  return lrs;
}

// ---- OneCycle -------------------------------------------------------------------------------

OneCycle::OneCycle(std::shared_ptr<torch::optim::Optimizer> optimizer,
                   const OneCycleOptions& options)
    : DeepSpeedScheduler(std::move(optimizer), options.last_batch_iteration) {
  // _initialize_cycle
  first_step_size_ = static_cast<double>(options.cycle_first_step_size);
  second_step_size_ = options.cycle_second_step_size
                          ? static_cast<double>(*options.cycle_second_step_size)
                          : first_step_size_;
  if (first_step_size_ <= 0) {
    throw ArgumentError("scheduler.params.cycle_first_step_size must be positive, got " +
                        std::to_string(options.cycle_first_step_size));
  }
  if (second_step_size_ < 0) {
    throw ArgumentError("scheduler.params.cycle_second_step_size must be >= 0, got " +
                        std::to_string(*options.cycle_second_step_size));
  }
  total_size_ = first_step_size_ + second_step_size_;
  step_ratio_ = first_step_size_ / total_size_;
  first_stair_count_ = options.cycle_first_stair_count;
  second_stair_count_ = options.cycle_second_stair_count.value_or(first_stair_count_);
  decay_step_size_ = options.decay_step_size;
  skip_lr_decay_ = skip_mom_decay_ = decay_step_size_ == 0;  // math.isclose(x, 0) is x == 0

  // _initialize_lr
  if (options.cycle_min_lr.empty() || options.cycle_max_lr.empty()) {
    throw ArgumentError("scheduler.params.cycle_min_lr and cycle_max_lr are required for OneCycle");
  }
  min_lrs_ = per_group(options.cycle_min_lr, "cycle_min_lr");
  max_lrs_ = per_group(options.cycle_max_lr, "cycle_max_lr");
  decay_lr_rate_ = options.decay_lr_rate;
  if (decay_lr_rate_ == 0.0) skip_lr_decay_ = true;

  // _initialize_momentum
  cycle_momentum_ = options.cycle_momentum;
  decay_mom_rate_ = options.decay_mom_rate;
  if (cycle_momentum_) {
    if (!has_betas(this->optimizer()->defaults())) {
      logging::logger()->warn(
          "OneCycle: cycle_momentum is disabled because the optimizer has no betas (only Adam "
          "and AdamW do); set scheduler.params.cycle_momentum to false to silence this");
      cycle_momentum_ = false;
    } else {
      min_moms_ = per_group(options.cycle_min_mom, "cycle_min_mom");
      max_moms_ = per_group(options.cycle_max_mom, "cycle_max_mom");
      if (decay_mom_rate_ == 0.0) skip_mom_decay_ = true;
    }
  }
  if (options.last_batch_iteration == -1) apply(-1);
}

double OneCycle::scale_factor(int64_t last_batch_iteration) const {
  const auto batch_iteration = static_cast<double>(last_batch_iteration + 1);
  const double cycle = std::floor(1 + batch_iteration / total_size_);
  const double x = 1. + batch_iteration / total_size_ - cycle;
  double scale;
  int64_t stair_count;
  if (x <= step_ratio_) {
    scale = x / step_ratio_;
    stair_count = first_stair_count_;
  } else {
    scale = (x - 1) / (step_ratio_ - 1);
    stair_count = second_stair_count_;
  }
  if (stair_count > 0) {
    // Python's float % equals fmod for these non-negative operands.
    const double cycle_iteration = std::fmod(batch_iteration, total_size_);
    const auto stairs = static_cast<double>(stair_count);
    const double position = cycle_iteration <= first_step_size_
                                ? cycle_iteration * stairs / first_step_size_
                                : (total_size_ - cycle_iteration) * stairs / second_step_size_;
    scale = std::floor(position) / stairs;
  }
  return scale;
}

std::vector<double> OneCycle::lrs_at(int64_t i) const {
  if (i < 0) return min_lrs_;  // set by the constructor
  if (static_cast<double>(i) < total_size_) {
    const double scale = scale_factor(i);
    std::vector<double> lrs(min_lrs_.size());
    for (size_t k = 0; k < lrs.size(); ++k) {
      const double base_height = (max_lrs_[k] - min_lrs_[k]) * scale;
      lrs[k] = min_lrs_[k] + base_height;
    }
    return lrs;
  }
  if (skip_lr_decay_) return min_lrs_;
  const double decay_iteration = static_cast<double>(i) - total_size_ + 1;
  const double interval = decay_iteration / static_cast<double>(decay_step_size_);
  const double factor = 1 + decay_lr_rate_ * interval;
  std::vector<double> lrs(min_lrs_.size());
  for (size_t k = 0; k < lrs.size(); ++k) lrs[k] = min_lrs_[k] / factor;
  return lrs;
}

std::vector<double> OneCycle::beta1_at(int64_t i) const {
  if (!cycle_momentum_) return {};
  if (i < 0) return min_moms_;
  if (static_cast<double>(i) < total_size_) {
    const double scale = scale_factor(i);
    std::vector<double> moms(min_moms_.size());
    for (size_t k = 0; k < moms.size(); ++k) {
      const double base_height = (max_moms_[k] - min_moms_[k]) * scale;
      moms[k] = max_moms_[k] - base_height;
    }
    return moms;
  }
  if (skip_mom_decay_) return max_moms_;
  const double decay_iteration = static_cast<double>(i) - total_size_ + 1;
  const double interval = decay_iteration / static_cast<double>(decay_step_size_);
  const double factor = 1 + decay_mom_rate_ * interval;
  std::vector<double> moms(max_moms_.size());
  for (size_t k = 0; k < moms.size(); ++k) moms[k] = max_moms_[k] * factor;
  return moms;
}

void OneCycle::apply(int64_t i) {
  DeepSpeedScheduler::apply(i);
  if (!cycle_momentum_) return;
  const auto moms = beta1_at(i);
  auto& groups = optimizer()->param_groups();
  for (size_t k = 0; k < groups.size(); ++k)
    set_betas(groups[k].options(), moms[k], kOneCycleBeta2);
}

// ---- factory -------------------------------------------------------------------------------

namespace {

using deepspeed_detail::DsParams;

WarmupType warmup_type(const DsParams& p) {
  const std::string value = p.string("warmup_type", "log");
  if (value == "log") return WarmupType::kLog;
  if (value == "linear") return WarmupType::kLinear;
  // DeepSpeed warns and falls back to "log"; refusing catches typos such as "Linear".
  throw ArgumentError(p.path("warmup_type") + " must be \"log\" or \"linear\", got \"" + value +
                      "\"");
}

WarmupLROptions warmup_options(const DsParams& p, size_t groups, bool decay) {
  WarmupLROptions o;
  o.warmup_min_lr = p.per_group("warmup_min_lr", groups).value_or(std::vector<double>{0.0});
  // WarmupLR's default is None (each group's lr); WarmupDecayLR's signature says 0.001.
  o.warmup_max_lr = p.per_group("warmup_max_lr", groups)
                        .value_or(decay ? std::vector<double>{0.001} : std::vector<double>{});
  o.warmup_num_steps = p.integer("warmup_num_steps", 1000);
  if (o.warmup_num_steps <= 0) {
    throw ArgumentError(p.path("warmup_num_steps") + " must be a positive integer, got " +
                        std::to_string(o.warmup_num_steps));
  }
  o.warmup_type = warmup_type(p);
  o.last_batch_iteration = p.integer("last_batch_iteration", -1);
  return o;
}

void check_total_num_steps(const DsParams& p, int64_t total) {
  if (total < 0) {
    throw ArgumentError(p.path("total_num_steps") + " must be >= 0, got " + std::to_string(total));
  }
}

}  // namespace

const std::vector<std::string>& supported_deepspeed_schedulers() {
  static const std::vector<std::string> types = {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR",
                                                 "OneCycle"};
  return types;
}

std::shared_ptr<LRScheduler> create_deepspeed_scheduler(
    const std::string& type, const nlohmann::json& params,
    std::shared_ptr<torch::optim::Optimizer> optimizer) {
  if (!optimizer) throw ArgumentError("create_deepspeed_scheduler: the optimizer is null");
  const size_t groups = optimizer->param_groups().size();
  const std::vector<std::string> warmup_keys = {
      "warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration"};
  if (type == "WarmupLR") {
    const DsParams p(params, "scheduler", type, warmup_keys);
    return std::make_shared<WarmupLR>(std::move(optimizer), warmup_options(p, groups, false));
  }
  if (type == "WarmupDecayLR") {
    auto keys = warmup_keys;
    keys.push_back("total_num_steps");
    const DsParams p(params, "scheduler", type, keys);
    const int64_t total = p.required_integer("total_num_steps");
    check_total_num_steps(p, total);
    return std::make_shared<WarmupDecayLR>(std::move(optimizer), total,
                                           warmup_options(p, groups, true));
  }
  if (type == "WarmupCosineLR") {
    const DsParams p(params, "scheduler", type,
                     {"total_num_steps", "warmup_min_ratio", "warmup_num_steps", "cos_min_ratio",
                      "warmup_type", "last_batch_iteration"});
    WarmupCosineLROptions o;
    o.total_num_steps = p.required_integer("total_num_steps");
    check_total_num_steps(p, o.total_num_steps);
    o.warmup_min_ratio = p.number("warmup_min_ratio", 0.0);
    o.warmup_num_steps = p.integer("warmup_num_steps", 1000);
    if (o.warmup_num_steps <= 0) {
      throw ArgumentError(p.path("warmup_num_steps") + " must be a positive integer, got " +
                          std::to_string(o.warmup_num_steps));
    }
    o.cos_min_ratio = p.number("cos_min_ratio", 0.0001);
    o.warmup_type = warmup_type(p);
    o.last_batch_iteration = p.integer("last_batch_iteration", -1);
    return std::make_shared<WarmupCosineLR>(std::move(optimizer), o);
  }
  if (type == "OneCycle") {
    const DsParams p(params, "scheduler", type,
                     {"cycle_min_lr", "cycle_max_lr", "decay_lr_rate", "cycle_first_step_size",
                      "cycle_second_step_size", "cycle_first_stair_count",
                      "cycle_second_stair_count", "decay_step_size", "cycle_momentum",
                      "cycle_min_mom", "cycle_max_mom", "decay_mom_rate", "last_batch_iteration"});
    OneCycleOptions o;
    // Required positional arguments in DeepSpeed.
    for (const char* key : {"cycle_min_lr", "cycle_max_lr"}) {
      if (!p.has(key)) {
        throw ArgumentError(p.path(key) + " is required for scheduler type \"OneCycle\"; add it");
      }
    }
    o.cycle_min_lr = *p.per_group("cycle_min_lr", groups);
    o.cycle_max_lr = *p.per_group("cycle_max_lr", groups);
    o.decay_lr_rate = p.number("decay_lr_rate", 0.0);
    o.cycle_first_step_size = p.integer("cycle_first_step_size", 2000);
    if (o.cycle_first_step_size <= 0) {
      throw ArgumentError(p.path("cycle_first_step_size") + " must be positive, got " +
                          std::to_string(o.cycle_first_step_size));
    }
    o.cycle_second_step_size = p.optional_integer("cycle_second_step_size");
    if (o.cycle_second_step_size && *o.cycle_second_step_size < 0) {
      throw ArgumentError(p.path("cycle_second_step_size") + " must be >= 0, got " +
                          std::to_string(*o.cycle_second_step_size));
    }
    o.cycle_first_stair_count = p.integer("cycle_first_stair_count", 0);
    o.cycle_second_stair_count = p.optional_integer("cycle_second_stair_count");
    for (const char* key :
         {"cycle_first_stair_count", "cycle_second_stair_count", "decay_step_size"}) {
      if (p.integer(key, 0) < 0) {
        throw ArgumentError(p.path(key) + " must be >= 0, got " +
                            std::to_string(p.integer(key, 0)));
      }
    }
    o.decay_step_size = p.integer("decay_step_size", 0);
    o.cycle_momentum = p.boolean("cycle_momentum", true);
    o.cycle_min_mom = p.per_group("cycle_min_mom", groups).value_or(std::vector<double>{0.8});
    o.cycle_max_mom = p.per_group("cycle_max_mom", groups).value_or(std::vector<double>{0.9});
    o.decay_mom_rate = p.number("decay_mom_rate", 0.0);
    o.last_batch_iteration = p.integer("last_batch_iteration", -1);
    return std::make_shared<OneCycle>(std::move(optimizer), o);
  }
  if (type == "LRRangeTest") {
    throw ArgumentError(
        "scheduler.type \"LRRangeTest\" is a DeepSpeed scheduler that ctrainer "
        "does not support; use one of WarmupLR, WarmupDecayLR, WarmupCosineLR, "
        "OneCycle, or drop the \"scheduler\" section to use --lr_scheduler_type");
  }
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  std::string hint;
  for (const auto& known : supported_deepspeed_schedulers()) {
    if (lower(known) == lower(type))
      hint = " (names are case-sensitive: did you mean \"" + known + "\"?)";
  }
  throw ArgumentError("scheduler.type \"" + type + "\" is not a scheduler ctrainer supports" +
                      hint +
                      "; use one of WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, or drop the "
                      "\"scheduler\" section to use --lr_scheduler_type");
}

}  // namespace ctrainer
