// Trainer::save_model / save_state / log_metrics / save_metrics: the final artefacts of a run in
// output_dir (as opposed to the resumable checkpoint-N folders of trainer_checkpoint.cpp).
#include <cstdio>
#include <filesystem>

#include <ctrainer/core/json_file.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/trainer/evaluation/metrics_report.h>
#include <ctrainer/trainer/runtime/logging.h>
#include <ctrainer/trainer/trainer.h>

namespace ctrainer {

void Trainer::save_model(const std::optional<std::string>& output_dir) {
  const std::string dir = output_dir.value_or(args_.output_dir);
  // ZeRO-3 holds shards: every rank takes part in gathering the full weights rank 0 writes.
  strategy_->gather_full_parameters(*model_);
  if (process_.is_world_process_zero()) {
    logging::logger()->info("Saving model checkpoint to {}", dir);
    save_pretrained(*model_, dir);
  }
  strategy_->release_full_parameters(*model_);
}

void Trainer::save_state() const {
  if (!process_.is_world_process_zero()) return;
  std::filesystem::create_directories(args_.output_dir);
  write_json_file(std::filesystem::path(args_.output_dir) / "trainer_state.json", state_.to_json());
}

void Trainer::log_metrics(const std::string& split, const Metrics& metrics) const {
  if (!process_.is_world_process_zero()) return;
  std::fputs(format_metrics_block(split, metrics).c_str(), stdout);
  std::fflush(stdout);
}

void Trainer::save_metrics(const std::string& split, const Metrics& metrics) const {
  if (!process_.is_world_process_zero()) return;
  ctrainer::save_metrics(args_.output_dir, split, metrics);
}

}  // namespace ctrainer
