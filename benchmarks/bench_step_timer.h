#pragma once
/// \file StepTimer: a Trainer callback that records the wall time of every optimizer step, for the
/// scenarios that time a real Trainer (precision, scaling).
#include <chrono>
#include <string>
#include <vector>

#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer::bench {

/// Wall time of every optimizer step (on_step_begin → on_step_end): the Trainer's whole step,
/// data loading, forward, backward (with DDP's all-reduce), clipping and the optimizer.
class StepTimer : public TrainerCallback {
 public:
  std::string name() const override { return "StepTimer"; }
  void on_step_begin(Args, TrainerState&, TrainerControl&, Ctx) override {
    start_ = std::chrono::steady_clock::now();
  }
  void on_step_end(Args, TrainerState&, TrainerControl&, Ctx) override {
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  std::vector<double> seconds;  ///< one per optimizer step, in order

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ctrainer::bench
