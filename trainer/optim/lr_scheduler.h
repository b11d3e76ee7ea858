#pragma once
/// \file Learning-rate schedules with Hugging Face's exact formulas (transformers/optimization.py)
/// and a LambdaLR-style scheduler that applies them to a torch::optim::Optimizer's param groups.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <nlohmann/json.hpp>

#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {

/// Equivalent of torch.optim.lr_scheduler.LambdaLR: each param group's lr is
/// `base_lr * lr_lambda(last_epoch)`, where base_lr is the group's lr at construction.
/// Like LambdaLR (constructed with last_epoch=-1), construction performs the initial step:
/// last_epoch() is 0 and every group's lr is already base_lr * lr_lambda(0).
/// Schedulers that are not a multiplier of a base lr (DeepSpeed's, deepspeed_schedulers.h)
/// derive from it and override step(), state_dict() and load_state_dict(); the Trainer and the
/// checkpoint manager only use this interface.
class LRScheduler {
 public:
  /// Multiplier of the base lr as a function of the step count.
  using LrLambda = std::function<double(int64_t step)>;

  /// Throws ArgumentError when `optimizer` is null or has no param groups, or `lr_lambda` is empty.
  LRScheduler(std::shared_ptr<torch::optim::Optimizer> optimizer, LrLambda lr_lambda);
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advances one step: last_epoch += 1, then each group's lr = base_lr * lr_lambda(last_epoch).
  virtual void step();

  /// The lr of each param group as last set by this scheduler.
  std::vector<double> get_last_lr() const { return last_lr_; }
  /// Number of step() calls since construction (or the restored value after load_state_dict).
  int64_t last_epoch() const { return last_epoch_; }
  /// The lr of each param group captured at construction.
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  /// The multiplier at `step` (no side effects). Throws ArgumentError for a derived scheduler
  /// that has no lambda.
  double multiplier(int64_t step) const;
  const std::shared_ptr<torch::optim::Optimizer>& optimizer() const { return optimizer_; }

  /// {"last_epoch": int, "base_lrs": [double...], "last_lr": [double...]} (the lambda itself is
  /// code, not state, as in torch where plain functions are not saved).
  virtual nlohmann::json state_dict() const;
  /// Restores last_epoch and base_lrs and re-applies base_lr * lr_lambda(last_epoch) to every
  /// param group, so the optimizer's lrs match the restored position even when the optimizer
  /// state was not loaded. Throws ArgumentError (naming the key) on a missing or ill-typed key, a
  /// negative last_epoch, a non-finite or negative base lr, or a base_lrs length that differs
  /// from the optimizer's number of param groups. Nothing is modified when it throws.
  virtual void load_state_dict(const nlohmann::json& state);

 protected:
  /// For derived schedulers that compute lrs themselves: checks `optimizer` (non-null, has param
  /// groups) and records each group's current lr as base_lrs() and get_last_lr(); no lambda, and
  /// the group lrs are left untouched.
  explicit LRScheduler(std::shared_ptr<torch::optim::Optimizer> optimizer);
  /// Sets each param group's lr to lrs[i] (one entry per group) and records them as get_last_lr().
  void set_group_lrs(const std::vector<double>& lrs);
  void set_last_epoch(int64_t last_epoch) { last_epoch_ = last_epoch; }

 private:
  void apply_lrs();

  std::shared_ptr<torch::optim::Optimizer> optimizer_;
  LrLambda lr_lambda_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = 0;
};

/// The lr multiplier of schedule `type` at `step`, exactly as HF's lr lambdas compute it, with
/// the schedule's arguments `kwargs` (--lr_scheduler_kwargs; schedule_options.h lists them and
/// HF's defaults):
/// - linear: warm-up, then linear decay to 0 at num_training_steps.
/// - cosine: warm-up, then num_cycles (0.5) cosine waves down to 0.
/// - cosine_with_restarts: warm-up, then num_cycles (1) hard-restart cosine cycles; 0 from
///   num_training_steps on.
/// - polynomial: warm-up, then (lr_init - lr_end) * remaining^power + lr_end over lr_init
///   (lr_end 1e-7, power 1.0); lr_end / lr_init past num_training_steps. `initial_lr` is
///   lr_init (HF: optimizer.defaults["lr"]), which polynomial and min_lr use.
/// - constant: 1. constant_with_warmup: warm-up, then 1.
/// - inverse_sqrt: warm-up, then 1 / sqrt((step + timescale - warmup) / timescale) with
///   timescale from kwargs, else num_warmup_steps, or 10000 when that is 0.
/// - cosine_with_min_lr: cosine from 1 down to min_lr_rate (or min_lr / initial_lr).
/// - cosine_warmup_with_min_lr: the same counted from the step after warm-up, whose ramp is
///   (step + 1) / warmup, or starts at warmup_lr_rate.
/// - warmup_stable_decay: warm-up (warmup_type) from min_lr_ratio, 1 for num_stable_steps
///   (default: what warm-up and num_decay_steps leave), decay (decay_type) over num_decay_steps
///   to min_lr_ratio, then min_lr_ratio.
/// Warm-up is step / max(1, num_warmup_steps) for step < num_warmup_steps unless said above.
/// Throws ArgumentError for a value outside SchedulerType's table (an integer cast to it), for
/// kwargs the schedule does not take, for polynomial when initial_lr <= lr_end, and for
/// negative step counts.
double schedule_multiplier(SchedulerType type, int64_t step, int64_t num_warmup_steps,
                           int64_t num_training_steps, double initial_lr,
                           const nlohmann::json& kwargs = nullptr);

/// HF's get_scheduler(name, optimizer, num_warmup_steps, num_training_steps,
/// scheduler_specific_kwargs): an LRScheduler for schedule `type` (see schedule_multiplier).
/// lr_init is the optimizer's defaults() lr, like HF. Throws ArgumentError as
/// schedule_multiplier does.
std::shared_ptr<LRScheduler> get_scheduler(SchedulerType type,
                                           std::shared_ptr<torch::optim::Optimizer> optimizer,
                                           int64_t num_warmup_steps, int64_t num_training_steps,
                                           const nlohmann::json& kwargs = nullptr);

/// HF's TrainingArguments.get_warmup_steps: warmup_steps when >= 1; below 1 and above 0,
/// ceil(num_training_steps * warmup_steps) (transformers 5); at 0, ceil(num_training_steps *
/// warmup_ratio) (transformers 4's flag).
int64_t get_warmup_steps(const TrainingArguments& args, int64_t num_training_steps);

}  // namespace ctrainer
