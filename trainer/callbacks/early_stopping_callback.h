#pragma once
/// \file EarlyStoppingCallback: stop when the tracked eval metric stops improving (HF's).
#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer {

/// Stops training after `patience` evaluations in a row in which metric_for_best_model did not
/// improve on state.best_metric by more than `threshold`. Needs eval_strategy != "no" and
/// metric_for_best_model (checked at on_train_begin with a clear error).
class EarlyStoppingCallback : public TrainerCallback {
 public:
  explicit EarlyStoppingCallback(int64_t early_stopping_patience = 1,
                                 double early_stopping_threshold = 0.0);
  std::string name() const override { return "EarlyStoppingCallback"; }
  void on_train_begin(Args args, TrainerState& state, TrainerControl& control, Ctx) override;
  void on_evaluate(Args args, TrainerState& state, TrainerControl& control, Ctx ctx) override;
  /// Restores the patience counter saved in a checkpoint.
  void restore_state(const nlohmann::json& saved) override;

  /// Evaluations without improvement so far.
  int64_t patience_counter() const { return patience_counter_; }
  /// Counter and settings for checkpoints (HF's stateful_callbacks entry).
  nlohmann::json state() const;

 private:
  int64_t patience_;
  double threshold_;
  int64_t patience_counter_ = 0;
};

}  // namespace ctrainer
