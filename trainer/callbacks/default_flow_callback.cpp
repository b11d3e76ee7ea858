#include <ctrainer/trainer/callbacks/default_flow_callback.h>

namespace ctrainer {

void DefaultFlowCallback::on_step_end(Args args, TrainerState& state, TrainerControl& control,
                                      Ctx) {
  if (state.global_step == 1 && args.logging_first_step) control.should_log = true;
  if (args.logging_strategy == IntervalStrategy::kSteps && state.logging_steps > 0 &&
      state.global_step % state.logging_steps == 0)
    control.should_log = true;
  if (args.eval_strategy == IntervalStrategy::kSteps && state.eval_steps > 0 &&
      state.global_step % state.eval_steps == 0)
    control.should_evaluate = true;
  if (args.save_strategy == SaveStrategy::kSteps && state.save_steps > 0 &&
      state.global_step % state.save_steps == 0)
    control.should_save = true;
  if (state.global_step >= state.max_steps) {
    control.should_training_stop = true;
    // HF saves at the end of training whenever a save strategy is active.
    if (args.save_strategy != SaveStrategy::kNo) control.should_save = true;
  }
}

void DefaultFlowCallback::on_epoch_end(Args args, TrainerState&, TrainerControl& control, Ctx) {
  if (args.logging_strategy == IntervalStrategy::kEpoch) control.should_log = true;
  if (args.eval_strategy == IntervalStrategy::kEpoch) control.should_evaluate = true;
  if (args.save_strategy == SaveStrategy::kEpoch) control.should_save = true;
}

}  // namespace ctrainer
