#pragma once
/// \file Console output of a run on the main process: ProgressCallback (bar or periodic
/// lines, plus each log dict) and PrinterCallback (log dicts only, for --disable_tqdm).
#include <chrono>
#include <cstdio>
#include <string>

#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer {

/// One log dict as a console line: "[rank 0] {'loss': 0.6931, 'learning_rate': 5e-05, ...}"
/// (total_flos is left out, as HF does).
std::string format_log_line(const nlohmann::json& logs, int64_t rank);

/// Progress of training on the world's main process: a bar redrawn in place (steps, it/s,
/// elapsed, ETA) when stderr is a terminal, else a plain line at every 10% of the steps.
/// Log dicts are printed to stdout.
class ProgressCallback : public TrainerCallback {
 public:
  /// `interactive`: draw the bar in place; defaults to isatty(stderr).
  explicit ProgressCallback(std::FILE* progress_stream = stderr, std::FILE* log_stream = stdout);
  ProgressCallback(std::FILE* progress_stream, std::FILE* log_stream, bool interactive);
  std::string name() const override { return "ProgressCallback"; }
  void on_train_begin(Args, TrainerState& state, TrainerControl&, Ctx) override;
  void on_step_end(Args, TrainerState& state, TrainerControl&, Ctx) override;
  void on_log(Args, TrainerState& state, TrainerControl&, Ctx ctx) override;
  void on_train_end(Args, TrainerState& state, TrainerControl&, Ctx) override;

 private:
  void render(const TrainerState& state, bool final);

  std::FILE* progress_;
  std::FILE* log_;
  bool interactive_;
  bool active_ = false;
  int64_t start_step_ = 0;
  int64_t next_plain_step_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

/// Prints each log dict on the world's main process (used instead of ProgressCallback with
/// --disable_tqdm).
class PrinterCallback : public TrainerCallback {
 public:
  explicit PrinterCallback(std::FILE* log_stream = stdout) : log_(log_stream) {}
  std::string name() const override { return "PrinterCallback"; }
  void on_log(Args, TrainerState& state, TrainerControl&, Ctx ctx) override;

 private:
  std::FILE* log_;
};

}  // namespace ctrainer
