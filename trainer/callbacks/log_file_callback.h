#pragma once
/// \file LogFileCallback: every log dict as one JSON line in output_dir/trainer_log.jsonl.
#include <string>

#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer {

/// Appends each log dict (with "step" and "epoch") as one JSON line to
/// output_dir/trainer_log.jsonl on the world's main process. A fresh run starts a new file; a
/// resumed run rewrites it from the checkpoint's log_history first.
class LogFileCallback : public TrainerCallback {
 public:
  static constexpr const char* kFileName = "trainer_log.jsonl";
  std::string name() const override { return "LogFileCallback"; }
  void on_train_begin(Args args, TrainerState& state, TrainerControl&, Ctx) override;
  void on_log(Args args, TrainerState& state, TrainerControl&, Ctx) override;
};

}  // namespace ctrainer
