#pragma once
/// \file DeepSpeed's learning-rate schedulers (deepspeed/runtime/lr_schedules.py, DeepSpeed
/// 0.19): WarmupLR, WarmupDecayLR, WarmupCosineLR and OneCycle, built from a DeepSpeed config's
/// "scheduler" section. They keep DeepSpeed's formulas, defaults and stepping convention:
///
/// - `last_batch_iteration` (exposed as last_epoch()) is -1 after construction; each step()
///   adds 1 and sets the lrs for the new value. With the default last_batch_iteration=-1 the
///   constructor already sets the starting lrs (WarmupLR/WarmupDecayLR: warmup_min_lr;
///   WarmupCosineLR: 0; OneCycle: cycle_min_lr and betas (cycle_min_mom, 0.99)), so the first
///   optimizer step runs with those, as under DeepSpeed's engine, which steps the scheduler
///   after each optimizer step and never at construction. With any other last_batch_iteration
///   the constructor leaves the optimizer untouched, as DeepSpeed does.
/// - state_dict() is {"type", "last_batch_iteration", "last_lr"}; load_state_dict() restores
///   last_batch_iteration and re-applies that position's lrs (and OneCycle's betas), which are a
///   pure function of it, so a resumed run continues bit for bit.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <nlohmann/json_fwd.hpp>

#include <ctrainer/trainer/optim/lr_scheduler.h>

namespace ctrainer {

/// DeepSpeed's warm-up curves: log: log(i + 1) / log(warmup_num_steps); linear:
/// i / warmup_num_steps, at last_batch_iteration i.
enum class WarmupType { kLog, kLinear };

/// Common base: last_batch_iteration bookkeeping, per-group lrs, state. Derived classes give
/// the lrs at a last_batch_iteration >= 0 and at -1 (the constructor's values).
class DeepSpeedScheduler : public LRScheduler {
 public:
  /// Advances last_batch_iteration by one and applies its lrs (DeepSpeed's step()).
  void step() override;
  /// {"type": type(), "last_batch_iteration": int, "last_lr": [double...]}.
  nlohmann::json state_dict() const override;
  /// Restores last_batch_iteration (an integer >= -1) and re-applies its lrs. Throws
  /// ArgumentError (nothing modified) when the state is not an object, 'type' names another
  /// scheduler (e.g. a checkpoint written with a different DeepSpeed "scheduler" section) or
  /// 'last_batch_iteration' is missing, not an integer or below -1.
  void load_state_dict(const nlohmann::json& state) override;

  /// DeepSpeed's class name: "WarmupLR", "WarmupDecayLR", "WarmupCosineLR" or "OneCycle".
  virtual std::string type() const = 0;
  /// The lr of each param group at `last_batch_iteration` (>= -1); no side effects.
  virtual std::vector<double> lrs_at(int64_t last_batch_iteration) const = 0;

 protected:
  DeepSpeedScheduler(std::shared_ptr<torch::optim::Optimizer> optimizer,
                     int64_t last_batch_iteration);
  /// Sets the lrs (and anything else the scheduler drives) for `last_batch_iteration`.
  virtual void apply(int64_t last_batch_iteration);
  /// Checks a per-group list from a constructor: one value per group (or one for all).
  std::vector<double> per_group(std::vector<double> values, const std::string& name) const;
};

/// DeepSpeed's WarmupLR: lr = min_lr + (max_lr - min_lr) * gamma, gamma rising from 0 to 1 over
/// warmup_num_steps (at least 2), then 1.
struct WarmupLROptions {
  /// Per param group, or one value for all. Default 0.
  std::vector<double> warmup_min_lr = {0.0};
  /// Per param group, or one value for all. Empty: each group's lr at construction (WarmupLR's
  /// default; WarmupDecayLR's is 0.001, which the config factory fills in).
  std::vector<double> warmup_max_lr;
  /// > 0; DeepSpeed uses max(2, warmup_num_steps).
  int64_t warmup_num_steps = 1000;
  WarmupType warmup_type = WarmupType::kLog;
  int64_t last_batch_iteration = -1;
};

class WarmupLR : public DeepSpeedScheduler {
 public:
  /// Throws ArgumentError for warmup_num_steps <= 0 or a per-group list whose length is not 1 or
  /// the number of param groups.
  WarmupLR(std::shared_ptr<torch::optim::Optimizer> optimizer, const WarmupLROptions& options);
  std::string type() const override { return "WarmupLR"; }
  std::vector<double> lrs_at(int64_t last_batch_iteration) const override;

 protected:
  /// The warm-up fraction (< warmup_num_steps) or 1 afterwards.
  virtual double gamma(int64_t last_batch_iteration) const;
  double warmup_gamma(int64_t last_batch_iteration) const;
  int64_t warmup_num_steps_;  // max(2, warmup_num_steps), as DeepSpeed stores it

 private:
  std::vector<double> min_lrs_;
  std::vector<double> delta_lrs_;
  WarmupType warmup_type_;
  double inverse_log_warm_up_;
};

/// DeepSpeed's WarmupDecayLR: WarmupLR's warm-up, then gamma = max(0, (total_num_steps - i) /
/// max(1, total_num_steps - warmup_num_steps)).
class WarmupDecayLR : public WarmupLR {
 public:
  WarmupDecayLR(std::shared_ptr<torch::optim::Optimizer> optimizer, int64_t total_num_steps,
                const WarmupLROptions& options);
  std::string type() const override { return "WarmupDecayLR"; }

 protected:
  double gamma(int64_t last_batch_iteration) const override;

 private:
  int64_t total_num_steps_;
};

/// DeepSpeed's WarmupCosineLR: lr = org_lr * ratio, where org_lr is each group's lr at
/// construction; ratio warms up from warmup_min_ratio to 1 over warmup_num_steps, then follows
/// a cosine down to cos_min_ratio at total_num_steps and stays there.
struct WarmupCosineLROptions {
  int64_t total_num_steps = 0;  // required
  double warmup_min_ratio = 0.0;
  int64_t warmup_num_steps = 1000;  // > 0; DeepSpeed uses max(2, .)
  double cos_min_ratio = 0.0001;
  WarmupType warmup_type = WarmupType::kLog;
  int64_t last_batch_iteration = -1;
};

class WarmupCosineLR : public DeepSpeedScheduler {
 public:
  /// Throws ArgumentError for warmup_num_steps <= 0.
  WarmupCosineLR(std::shared_ptr<torch::optim::Optimizer> optimizer,
                 const WarmupCosineLROptions& options);
  std::string type() const override { return "WarmupCosineLR"; }
  std::vector<double> lrs_at(int64_t last_batch_iteration) const override;
  /// The ratio at `last_batch_iteration` (0 before the first step).
  double lr_ratio(int64_t last_batch_iteration) const;

 private:
  WarmupCosineLROptions options_;  // warmup_num_steps already max(2, .)
  double inverse_log_warm_up_;
  std::vector<double> org_lrs_;
};

/// DeepSpeed's OneCycle (1cycle policy): lr climbs from cycle_min_lr to cycle_max_lr over
/// cycle_first_step_size steps, comes back over cycle_second_step_size, then decays as
/// cycle_min_lr / (1 + decay_lr_rate * n / decay_step_size); optional staircases; beta1 cycles
/// the other way between cycle_max_mom and cycle_min_mom (beta2 is set to 0.99, as DeepSpeed
/// does) when the optimizer has betas (Adam, AdamW).
struct OneCycleOptions {
  std::vector<double> cycle_min_lr;  // required; per param group or one for all
  std::vector<double> cycle_max_lr;  // required; per param group or one for all
  double decay_lr_rate = 0.0;
  int64_t cycle_first_step_size = 2000;             // > 0
  std::optional<int64_t> cycle_second_step_size;    // >= 0; default first step size
  int64_t cycle_first_stair_count = 0;              // 0: no staircase
  std::optional<int64_t> cycle_second_stair_count;  // default cycle_first_stair_count
  int64_t decay_step_size = 0;                      // 0: no decay after the cycle
  bool cycle_momentum = true;
  std::vector<double> cycle_min_mom = {0.8};
  std::vector<double> cycle_max_mom = {0.9};
  double decay_mom_rate = 0.0;
  int64_t last_batch_iteration = -1;
};

class OneCycle : public DeepSpeedScheduler {
 public:
  /// Throws ArgumentError for cycle_first_step_size <= 0, cycle_second_step_size < 0 or
  /// per-group lists of the wrong length. cycle_momentum is turned off (with a warning, as in
  /// DeepSpeed) when the optimizer is neither Adam nor AdamW.
  OneCycle(std::shared_ptr<torch::optim::Optimizer> optimizer, const OneCycleOptions& options);
  std::string type() const override { return "OneCycle"; }
  std::vector<double> lrs_at(int64_t last_batch_iteration) const override;
  /// beta1 of each group at `last_batch_iteration` (beta2 is always 0.99); empty when momentum
  /// is not cycled.
  std::vector<double> beta1_at(int64_t last_batch_iteration) const;
  bool cycles_momentum() const { return cycle_momentum_; }

 protected:
  void apply(int64_t last_batch_iteration) override;

 private:
  double scale_factor(int64_t last_batch_iteration) const;

  double total_size_, step_ratio_, first_step_size_, second_step_size_;
  int64_t first_stair_count_, second_stair_count_;
  int64_t decay_step_size_;
  bool skip_lr_decay_, skip_mom_decay_;
  double decay_lr_rate_, decay_mom_rate_;
  std::vector<double> min_lrs_, max_lrs_, min_moms_, max_moms_;
  bool cycle_momentum_;
};

/// The DeepSpeed scheduler `type` ("WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle";
/// case-sensitive, as DeepSpeed looks the class up by name) with the config's "params", using
/// DeepSpeed's defaults for absent keys. "auto" values must already be filled by the config
/// loader. Throws ArgumentError naming `scheduler.type` for an unknown or unsupported type
/// (listing the supported ones) and `scheduler.params.<key>` for an unknown key, a value of the
/// wrong JSON type, a remaining "auto", a missing required key or an invalid value.
std::shared_ptr<LRScheduler> create_deepspeed_scheduler(
    const std::string& type, const nlohmann::json& params,
    std::shared_ptr<torch::optim::Optimizer> optimizer);

/// The scheduler types create_deepspeed_scheduler builds.
const std::vector<std::string>& supported_deepspeed_schedulers();

}  // namespace ctrainer
