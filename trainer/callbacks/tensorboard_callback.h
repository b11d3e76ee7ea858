#pragma once
/// \file --report_to tensorboard: HF's TensorBoardCallback, writing TensorBoard event files from
/// C++ (integrations/tensorboard/event_file_writer.h).
#include <exception>
#include <filesystem>
#include <memory>
#include <string>

#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer {

namespace tensorboard {
class EventFileWriter;
}

/// The folder --report_to tensorboard writes to: --logging_dir when given, else
/// $TENSORBOARD_LOGGING_DIR (a leading ~ expanded; transformers 5's variable), else
/// output_dir/runs/<Mon DD_HH-MM-SS>_<hostname> at local time (HF's default_logdir()).
std::filesystem::path tensorboard_logging_dir(const TrainingArguments& args);

/// HF's TensorBoardCallback on the world's main process only: at train begin the arguments as
/// text "args" (to_json, indented) and the model's config as "model_config" when it has one;
/// each log as scalars at the global step with HF's tags ("eval_loss" -> "eval/loss",
/// "test_x" -> "test/x", anything else "train/<key>"), strings as text, other values dropped
/// with a warning; flushed after every log. A failure to write is logged and ends the
/// reporting, never the training.
class TensorBoardCallback : public TrainerCallback {
 public:
  TensorBoardCallback();
  ~TensorBoardCallback() override;
  std::string name() const override { return "TensorBoardCallback"; }
  void on_train_begin(Args args, TrainerState& state, TrainerControl&, Ctx context) override;
  void on_log(Args args, TrainerState& state, TrainerControl&, Ctx context) override;
  void on_train_end(Args args, TrainerState& state, TrainerControl&, Ctx) override;

  /// The event file being written (empty before train begin and on other processes).
  std::filesystem::path event_file() const;

 private:
  void open(const TrainingArguments& args);
  void stop_reporting(const std::exception& error);
  std::filesystem::path logging_dir_;
  std::unique_ptr<tensorboard::EventFileWriter> writer_;
  bool failed_ = false;
};

/// HF's rewrite_logs: the TensorBoard tag of a log key.
std::string tensorboard_tag(const std::string& log_key);

}  // namespace ctrainer
