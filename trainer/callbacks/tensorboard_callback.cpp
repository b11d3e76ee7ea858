#include <ctrainer/trainer/callbacks/tensorboard_callback.h>

#include <array>
#include <cstdlib>
#include <ctime>

#include <ctrainer/core/logging.h>
#include <ctrainer/integrations/tensorboard/event_file_writer.h>
#include <ctrainer/models/model.h>

namespace ctrainer {
namespace {

namespace fs = std::filesystem;

/// HF's default_logdir(): "runs/<%b%d_%H-%M-%S>_<hostname>", local time.
fs::path default_logdir() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  std::array<char, 64> stamp{};
  std::strftime(stamp.data(), stamp.size(), "%b%d_%H-%M-%S", &local);
  return fs::path("runs") / (std::string(stamp.data()) + "_" + tensorboard::host_name());
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

fs::path tensorboard_logging_dir(const TrainingArguments& args) {
  if (args.logging_dir) return *args.logging_dir;
  if (const char* env = std::getenv("TENSORBOARD_LOGGING_DIR"); env != nullptr && *env != '\0') {
    std::string dir = env;
    if (const char* home = std::getenv("HOME");
        home != nullptr && (dir == "~" || starts_with(dir, "~/")))
      dir = home + dir.substr(1);
    return dir;
  }
  return fs::path(args.output_dir) / default_logdir();
}

std::string tensorboard_tag(const std::string& log_key) {
  if (starts_with(log_key, "eval_")) return "eval/" + log_key.substr(5);
  if (starts_with(log_key, "test_")) return "test/" + log_key.substr(5);
  return "train/" + log_key;
}

TensorBoardCallback::TensorBoardCallback() = default;
TensorBoardCallback::~TensorBoardCallback() = default;

fs::path TensorBoardCallback::event_file() const {
  return writer_ ? writer_->path() : fs::path();
}

void TensorBoardCallback::open(const TrainingArguments& args) {
  if (writer_ || failed_) return;
  // Resolved once: logs after train end (a final evaluate) go to the same folder, a new file.
  if (logging_dir_.empty()) logging_dir_ = tensorboard_logging_dir(args);
  try {
    writer_ = std::make_unique<tensorboard::EventFileWriter>(logging_dir_);
  } catch (const std::exception& error) {
    stop_reporting(error);
  }
}

void TensorBoardCallback::stop_reporting(const std::exception& error) {
  logging::logger()->warn("--report_to tensorboard: {}; no longer reporting to TensorBoard",
                          error.what());
  writer_.reset();
  failed_ = true;
}

void TensorBoardCallback::on_train_begin(Args args, TrainerState& state, TrainerControl&,
                                         Ctx context) {
  if (!state.is_world_process_zero) return;
  open(args);
  if (!writer_) return;
  try {
    writer_->add_text("args", to_json(args).dump(2), 0);
    if (context.model != nullptr)
      if (const auto config = context.model->config())
        writer_->add_text("model_config", config->dump(2), 0);
    writer_->flush();
  } catch (const std::exception& error) {
    stop_reporting(error);
  }
}

void TensorBoardCallback::on_log(Args args, TrainerState& state, TrainerControl&, Ctx context) {
  if (!state.is_world_process_zero || context.logs == nullptr) return;
  open(args);
  if (!writer_) return;
  try {
    for (const auto& [key, value] : context.logs->items()) {
      if (value.is_number() || value.is_boolean())
        writer_->add_scalar(tensorboard_tag(key), value.get<double>(), state.global_step);
      else if (value.is_string())
        writer_->add_text(tensorboard_tag(key), value.get<std::string>(), state.global_step);
      else
        logging::logger()->warn(
            "--report_to tensorboard: the log value {} of key \"{}\" is neither a number nor a "
            "string; dropped",
            value.dump(), key);
    }
    writer_->flush();
  } catch (const std::exception& error) {
    stop_reporting(error);
  }
}

void TensorBoardCallback::on_train_end(Args, TrainerState&, TrainerControl&, Ctx) {
  writer_.reset();  // closes the file
}

}  // namespace ctrainer
