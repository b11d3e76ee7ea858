#pragma once
/// \file DefaultFlowCallback: turns logging/eval/save strategies into control flags (HF's).
#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer {

/// Sets should_log / should_evaluate / should_save at step and epoch ends according to the
/// "no" / "steps" / "epoch" strategies, and stops training at max_steps. Always installed first.
class DefaultFlowCallback : public TrainerCallback {
 public:
  std::string name() const override { return "DefaultFlowCallback"; }
  void on_step_end(Args args, TrainerState& state, TrainerControl& control, Ctx) override;
  void on_epoch_end(Args args, TrainerState& state, TrainerControl& control, Ctx) override;
};

}  // namespace ctrainer
