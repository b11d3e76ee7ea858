#include <ctrainer/trainer/optim/lr_scheduler.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/schedule_options.h>

namespace ctrainer {
namespace {

// HF's default for inverse_sqrt without a warm-up (optimization.py).
constexpr int64_t kInverseSqrtDefaultTimescale = 10000;

// Every schedule but "constant" starts with the same linear warm-up; the caller checks
// step < num_warmup_steps first. Written as HF does: float(step) / float(max(1, warmup)).
double warmup(int64_t step, int64_t num_warmup_steps) {
  return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, num_warmup_steps));
}

// Each function below mirrors one HF `_get_*_lr_lambda`, keeping HF's operation order so the
// results are bit-identical to Python's floats.

double linear(int64_t step, int64_t warm, int64_t total) {
  if (step < warm) return warmup(step, warm);
  return std::max(0.0, static_cast<double>(total - step) /
                           static_cast<double>(std::max<int64_t>(1, total - warm)));
}

double cosine(int64_t step, int64_t warm, int64_t total, double num_cycles) {
  if (step < warm) return warmup(step, warm);
  const double progress =
      static_cast<double>(step - warm) / static_cast<double>(std::max<int64_t>(1, total - warm));
  // HF applies no clamp to progress: past the end the cosine rises again (max(0, .) only
  // guards rounding); the Trainer never steps past num_training_steps.
  return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles * 2.0 * progress)));
}

double cosine_with_restarts(int64_t step, int64_t warm, int64_t total, double num_cycles) {
  if (step < warm) return warmup(step, warm);
  const double progress =
      static_cast<double>(step - warm) / static_cast<double>(std::max<int64_t>(1, total - warm));
  if (progress >= 1.0) return 0.0;
  // Python's `%` equals fmod for the non-negative operands seen here.
  const double phase = std::fmod(num_cycles * progress, 1.0);
  return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * phase)));
}

double polynomial(int64_t step, int64_t warm, int64_t total, double lr_init, double lr_end,
                  double power) {
  if (step < warm) return warmup(step, warm);
  if (step > total) return lr_end / lr_init;  // LambdaLR multiplies by lr_init
  const double lr_range = lr_init - lr_end;
  const int64_t decay_steps = total - warm;
  // HF divides by zero here (ZeroDivisionError) when warm == total == step; the decay is over
  // at that point, so return the end value instead of failing.
  if (decay_steps == 0) return lr_end / lr_init;
  const double pct_remaining =
      1.0 - static_cast<double>(step - warm) / static_cast<double>(decay_steps);
  const double decay = lr_range * std::pow(pct_remaining, power) + lr_end;
  return decay / lr_init;
}

double constant_with_warmup(int64_t step, int64_t warm) {
  if (step < warm) return warmup(step, warm);
  return 1.0;
}

double inverse_sqrt(int64_t step, int64_t warm, double timescale) {
  if (step < warm) return warmup(step, warm);
  const double shift = timescale - static_cast<double>(warm);
  return 1.0 / std::sqrt((static_cast<double>(step) + shift) / timescale);
}

// cosine_with_min_lr: HF's cosine with the floor min_lr_rate.
double cosine_with_min_lr(int64_t step, int64_t warm, int64_t total, double num_cycles,
                          double min_lr_rate) {
  if (step < warm) return warmup(step, warm);
  const double progress =
      static_cast<double>(step - warm) / static_cast<double>(std::max<int64_t>(1, total - warm));
  double factor = 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles * 2.0 * progress));
  factor = factor * (1 - min_lr_rate) + min_lr_rate;
  return std::max(0.0, factor);
}

// cosine_warmup_with_min_lr: HF's variant whose warm-up starts at (step + 1) / warm (or at
// warmup_lr_rate) and whose decay counts from the step after the warm-up.
double cosine_warmup_with_min_lr(int64_t step_count, int64_t warm_count, int64_t total_count,
                                 double num_cycles, double min_lr_rate,
                                 std::optional<double> warmup_lr_rate) {
  const auto step = static_cast<double>(step_count);
  const auto warm = static_cast<double>(warm_count);
  const auto total = static_cast<double>(total_count);
  if (step < warm) {
    if (!warmup_lr_rate) return (step + 1.0) / std::max(1.0, warm);
    return *warmup_lr_rate + (1.0 - *warmup_lr_rate) * step /
                                 static_cast<double>(std::max<int64_t>(1, warm_count - 1));
  }
  const double progress = (step - warm + 1.0) / std::max(1.0, total - warm);
  double factor = 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles * 2.0 * progress));
  factor = factor * (1 - min_lr_rate) + min_lr_rate;
  return std::max(0.0, factor);
}

// warmup_stable_decay: warm-up (linear, cosine or 1-sqrt) from min_lr_ratio, a constant
// stretch, a decay back to min_lr_ratio, then min_lr_ratio.
double warmup_stable_decay(int64_t step, int64_t warm, int64_t stable, const ScheduleOptions& o) {
  if (step < warm) {
    const double progress =
        static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warm));
    double factor = progress;
    if (o.warmup_type == "cosine") factor = 0.5 * (1.0 - std::cos(std::numbers::pi * progress));
    if (o.warmup_type == "1-sqrt") factor = 1.0 - std::sqrt(1.0 - progress);
    factor = factor * (1.0 - o.min_lr_ratio) + o.min_lr_ratio;
    return std::max(0.0, factor);
  }
  if (step < warm + stable) return 1.0;
  if (step < warm + stable + o.num_decay_steps) {
    const double progress = static_cast<double>(step - warm - stable) /
                            static_cast<double>(std::max<int64_t>(1, o.num_decay_steps));
    double factor = 1.0 - progress;
    if (o.decay_type == "cosine")
      factor = 0.5 * (1.0 + std::cos(std::numbers::pi * o.num_cycles * 2.0 * progress));
    if (o.decay_type == "1-sqrt") factor = 1.0 - std::sqrt(progress);
    factor = factor * (1.0 - o.min_lr_ratio) + o.min_lr_ratio;
    return std::max(0.0, factor);
  }
  return o.min_lr_ratio;
}

void check_steps(SchedulerType type, int64_t num_warmup_steps, int64_t num_training_steps) {
  const std::string name = to_string(type);
  if (num_warmup_steps < 0) {
    throw ArgumentError("lr schedule '" + name + "': num_warmup_steps must be >= 0, got " +
                        std::to_string(num_warmup_steps) + " (check --warmup_steps)");
  }
  if (num_training_steps < 0) {
    throw ArgumentError("lr schedule '" + name + "': num_training_steps must be >= 0, got " +
                        std::to_string(num_training_steps) + " (check --max_steps)");
  }
}

void check_polynomial_lr(double lr_init, double lr_end) {
  // HF: `if not (lr_init > lr_end): raise ValueError(...)`.
  if (!(lr_init > lr_end)) {
    std::ostringstream msg;
    msg << "lr schedule 'polynomial': lr_end (" << lr_end
        << ") must be smaller than the initial lr (" << lr_init
        << "); raise --learning_rate or lower lr_end in --lr_scheduler_kwargs";
    throw ArgumentError(msg.str());
  }
}

// The lambda of schedule `type` with its arguments bound; the type and arguments are checked.
LRScheduler::LrLambda make_lambda(SchedulerType type, int64_t warm, int64_t total, double lr_init,
                                  const nlohmann::json& kwargs) {
  if (!is_choice(type)) {
    throw ChoiceError("--lr_scheduler_type must be one of " + choices_text<SchedulerType>() +
                      " (got the value " + std::to_string(static_cast<int>(type)) + ")");
  }
  check_steps(type, warm, total);
  const ScheduleOptions o = schedule_options(type, kwargs);
  switch (type) {
    case SchedulerType::kLinear:
      return [=](int64_t s) { return linear(s, warm, total); };
    case SchedulerType::kCosine:
      return [=](int64_t s) { return cosine(s, warm, total, o.num_cycles); };
    case SchedulerType::kCosineWithRestarts:
      return [=](int64_t s) { return cosine_with_restarts(s, warm, total, o.num_cycles); };
    case SchedulerType::kPolynomial:
      check_polynomial_lr(lr_init, o.lr_end);
      return [=](int64_t s) { return polynomial(s, warm, total, lr_init, o.lr_end, o.power); };
    case SchedulerType::kConstant:
      return [](int64_t) { return 1.0; };
    case SchedulerType::kConstantWithWarmup:
      return [=](int64_t s) { return constant_with_warmup(s, warm); };
    case SchedulerType::kInverseSqrt: {
      const double timescale = o.timescale.value_or(
          static_cast<double>(warm != 0 ? warm : kInverseSqrtDefaultTimescale));
      return [=](int64_t s) { return inverse_sqrt(s, warm, timescale); };
    }
    case SchedulerType::kCosineWithMinLr:
    case SchedulerType::kCosineWarmupWithMinLr: {
      // HF: min_lr_rate = min_lr / optimizer.defaults["lr"].
      const double rate = o.min_lr ? *o.min_lr / lr_init : *o.min_lr_rate;
      if (type == SchedulerType::kCosineWithMinLr)
        return [=](int64_t s) { return cosine_with_min_lr(s, warm, total, o.num_cycles, rate); };
      return [=](int64_t s) {
        return cosine_warmup_with_min_lr(s, warm, total, o.num_cycles, rate, o.warmup_lr_rate);
      };
    }
    case SchedulerType::kWarmupStableDecay:
      break;
  }
  const int64_t stable = o.num_stable_steps.value_or(total - warm - o.num_decay_steps);
  return [=](int64_t s) { return warmup_stable_decay(s, warm, stable, o); };
}

}  // namespace

// ---- LRScheduler --------------------------------------------------------------------------

LRScheduler::LRScheduler(std::shared_ptr<torch::optim::Optimizer> optimizer, LrLambda lr_lambda)
    : optimizer_(std::move(optimizer)), lr_lambda_(std::move(lr_lambda)) {
  if (!optimizer_) throw ArgumentError("LRScheduler: the optimizer is null");
  if (!lr_lambda_) throw ArgumentError("LRScheduler: the lr lambda is empty");
  auto& groups = optimizer_->param_groups();
  if (groups.empty()) throw ArgumentError("LRScheduler: the optimizer has no param groups");
  base_lrs_.reserve(groups.size());
  for (auto& group : groups) base_lrs_.push_back(group.options().get_lr());
  apply_lrs();  // LambdaLR's initial step: last_epoch 0
}

LRScheduler::LRScheduler(std::shared_ptr<torch::optim::Optimizer> optimizer)
    : optimizer_(std::move(optimizer)) {
  if (!optimizer_) throw ArgumentError("LRScheduler: the optimizer is null");
  auto& groups = optimizer_->param_groups();
  if (groups.empty()) throw ArgumentError("LRScheduler: the optimizer has no param groups");
  for (auto& group : groups) base_lrs_.push_back(group.options().get_lr());
  last_lr_ = base_lrs_;
}

void LRScheduler::apply_lrs() {
  const double factor = lr_lambda_(last_epoch_);
  std::vector<double> lrs(base_lrs_.size());
  for (size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs_[i] * factor;
  set_group_lrs(lrs);
}

void LRScheduler::set_group_lrs(const std::vector<double>& lrs) {
  auto& groups = optimizer_->param_groups();
  if (lrs.size() != groups.size()) {
    throw ArgumentError("LRScheduler: " + std::to_string(lrs.size()) + " lrs for " +
                        std::to_string(groups.size()) + " param groups");
  }
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
  last_lr_ = lrs;
}

double LRScheduler::multiplier(int64_t step) const {
  if (!lr_lambda_) {
    throw ArgumentError(
        "LRScheduler::multiplier: this scheduler computes lrs directly and has no "
        "multiplier; read get_last_lr() instead");
  }
  return lr_lambda_(step);
}

void LRScheduler::step() {
  ++last_epoch_;
  apply_lrs();
}

nlohmann::json LRScheduler::state_dict() const {
  return nlohmann::json{
      {"last_epoch", last_epoch_}, {"base_lrs", base_lrs_}, {"last_lr", last_lr_}};
}

void LRScheduler::load_state_dict(const nlohmann::json& state) {
  const std::string where = "lr scheduler state";
  if (!state.is_object()) throw ArgumentError(where + ": expected a JSON object");
  if (!state.contains("last_epoch") || !state["last_epoch"].is_number_integer()) {
    throw ArgumentError(where + ": 'last_epoch' is missing or not an integer");
  }
  const auto last_epoch = state["last_epoch"].get<int64_t>();
  // (At most 2^53: the count comes from a file, and step() adds 1 to it.)
  if (last_epoch < 0 || last_epoch > (int64_t{1} << 53)) {
    throw ArgumentError(where + ": 'last_epoch' must be in [0, 2^53], got " +
                        state["last_epoch"].dump());
  }
  if (!state.contains("base_lrs") || !state["base_lrs"].is_array()) {
    throw ArgumentError(where + ": 'base_lrs' is missing or not an array");
  }
  std::vector<double> base_lrs;
  for (const auto& v : state["base_lrs"]) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0.0) {
      throw ArgumentError(where + ": 'base_lrs' holds " + v.dump() +
                          "; every entry must be a finite number >= 0");
    }
    base_lrs.push_back(v.get<double>());
  }
  const size_t groups = optimizer_->param_groups().size();
  if (base_lrs.size() != groups) {
    throw ArgumentError(
        where + ": 'base_lrs' has " + std::to_string(base_lrs.size()) +
        " entries but the optimizer has " + std::to_string(groups) +
        " param groups; the checkpoint was written for a different optimizer setup");
  }
  last_epoch_ = last_epoch;
  base_lrs_ = std::move(base_lrs);
  apply_lrs();
}

// ---- factories ----------------------------------------------------------------------------

double schedule_multiplier(SchedulerType type, int64_t step, int64_t num_warmup_steps,
                           int64_t num_training_steps, double initial_lr,
                           const nlohmann::json& kwargs) {
  LRScheduler::LrLambda lambda =
      make_lambda(type, num_warmup_steps, num_training_steps, initial_lr, kwargs);
  if (step < 0) {
    throw ArgumentError("lr schedule '" + to_string(type) + "': step must be >= 0, got " +
                        std::to_string(step));
  }
  return lambda(step);
}

std::shared_ptr<LRScheduler> get_scheduler(SchedulerType type,
                                           std::shared_ptr<torch::optim::Optimizer> optimizer,
                                           int64_t num_warmup_steps, int64_t num_training_steps,
                                           const nlohmann::json& kwargs) {
  if (!optimizer) throw ArgumentError("get_scheduler: the optimizer is null");
  // HF reads optimizer.defaults["lr"], the lr given to the optimizer's constructor.
  const double lr_init = optimizer->defaults().get_lr();
  return std::make_shared<LRScheduler>(
      std::move(optimizer),
      make_lambda(type, num_warmup_steps, num_training_steps, lr_init, kwargs));
}

int64_t get_warmup_steps(const TrainingArguments& args, int64_t num_training_steps) {
  if (args.warmup_steps >= 1) return static_cast<int64_t>(args.warmup_steps);
  // Below 1, warmup_steps is transformers 5's ratio; 0 leaves transformers 4's warmup_ratio.
  const double ratio = args.warmup_steps > 0 ? args.warmup_steps : args.warmup_ratio;
  return static_cast<int64_t>(std::ceil(static_cast<double>(num_training_steps) * ratio));
}

}  // namespace ctrainer
