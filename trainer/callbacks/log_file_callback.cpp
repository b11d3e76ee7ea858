#include <ctrainer/trainer/callbacks/log_file_callback.h>

#include <filesystem>
#include <fstream>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

std::filesystem::path log_path(const TrainingArguments& args) {
  return std::filesystem::path(args.output_dir) / LogFileCallback::kFileName;
}

std::ofstream open_log(const TrainingArguments& args, std::ios::openmode mode) {
  std::filesystem::create_directories(args.output_dir);
  std::ofstream out(log_path(args), mode);
  if (!out)
    throw std::runtime_error("cannot write " + log_path(args).string() +
                             ": check that --output_dir is writable");
  return out;
}

}  // namespace

void LogFileCallback::on_train_begin(Args args, TrainerState& state, TrainerControl&, Ctx) {
  if (!state.is_world_process_zero) return;
  // A fresh run starts an empty file; a resumed run rewrites it from the restored history, which
  // drops lines an interrupted run logged after its last checkpoint.
  auto out = open_log(args, std::ios::trunc);
  if (state.global_step > 0)
    for (const auto& entry : state.log_history) out << entry.dump() << '\n';
}

void LogFileCallback::on_log(Args args, TrainerState& state, TrainerControl&, Ctx) {
  if (!state.is_world_process_zero || state.log_history.empty()) return;
  // The history entry carries "step" (and "epoch"), which the raw logs dict lacks.
  open_log(args, std::ios::app) << state.log_history.back().dump() << '\n';
}

}  // namespace ctrainer
