#include <ctrainer/trainer/callbacks/default_flow_callback.h>

namespace ctrainer {

void DefaultFlowCallback::on_step_end(Args args, TrainerState& state, TrainerControl& control,
                                      Ctx) {
  if (state.global_step == 1 && args.logging_first_step) control.should_log = true;
  if (args.logging_strategy == "steps" && state.logging_steps > 0 &&
      state.global_step % state.logging_steps == 0)
    control.should_log = true;
  if (args.eval_strategy == "steps" && state.eval_steps > 0 &&
      state.global_step % state.eval_steps == 0)
    control.should_evaluate = true;
  if (args.save_strategy == "steps" && state.save_steps > 0 &&
      state.global_step % state.save_steps == 0)
    control.should_save = true;
  if (state.global_step >= state.max_steps) {
    control.should_training_stop = true;
    // HF saves at the end of training whenever a save strategy is active.
    if (args.save_strategy != "no") control.should_save = true;
  }
}

void DefaultFlowCallback::on_epoch_end(Args args, TrainerState&, TrainerControl& control, Ctx) {
  if (args.logging_strategy == "epoch") control.should_log = true;
  if (args.eval_strategy == "epoch") control.should_evaluate = true;
  if (args.save_strategy == "epoch") control.should_save = true;
}

}  // namespace ctrainer
