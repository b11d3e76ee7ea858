#include <ctrainer/trainer/callbacks/mlflow_callback.h>

#include <pwd.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include <ctrainer/core/logging.h>
#include <ctrainer/integrations/mlflow/python_str.h>
#include <ctrainer/integrations/mlflow/run_logger.h>
#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>
#include <ctrainer/models/model.h>

namespace ctrainer {
namespace {

/// MLflow's mlflow.user tag: the login name, as Python's getpass.getuser() finds it.
std::string user_name() {
  for (const char* variable : {"LOGNAME", "USER", "LNAME", "USERNAME"})
    if (const char* value = std::getenv(variable); value != nullptr && *value != '\0') return value;
  if (const passwd* entry = ::getpwuid(::getuid()); entry != nullptr && entry->pw_name != nullptr)
    return entry->pw_name;
  return "unknown";
}

/// The running program (MLflow's mlflow.source.name is the script's path).
std::string program_path() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("ctrainer") : path.string();
}

mlflow::Reports trainer_log_reports() {
  return {[](const std::string& text) { logging::logger()->info("--report_to mlflow: {}", text); },
          [](const std::string& text) { logging::logger()->warn("--report_to mlflow: {}", text); }};
}

}  // namespace

mlflow::KeyValues mlflow_params(const nlohmann::json& arguments, const nlohmann::json* model_config,
                                const mlflow::Settings& settings,
                                std::vector<std::string>* too_long) {
  nlohmann::json combined = nlohmann::json::object();
  if (model_config != nullptr && model_config->is_object()) combined = *model_config;
  for (const auto& [key, value] : arguments.items()) combined[key] = value;
  if (settings.flatten_params) combined = mlflow::flatten_dict(combined);
  mlflow::KeyValues params;
  for (const auto& [key, value] : combined.items()) {
    std::string text = mlflow::python_str(value);
    if (text.size() > mlflow::kMaxParamValueLength) {
      if (too_long != nullptr) too_long->push_back(key);
      continue;
    }
    params.emplace_back(key, std::move(text));
  }
  if (settings.max_log_params && *settings.max_log_params < params.size())
    params.resize(*settings.max_log_params);
  return params;
}

MlflowCallback::MlflowCallback() : MlflowCallback(mlflow::read_settings(process_environment())) {}

MlflowCallback::MlflowCallback(mlflow::Settings settings) : settings_(std::move(settings)) {}

MlflowCallback::~MlflowCallback() = default;

void MlflowCallback::setup(Args args, const TrainerState& state, Ctx context) {
  if (initialized_) return;
  initialized_ = true;
  if (!state.is_world_process_zero) return;
  logger_ = std::make_unique<mlflow::RunLogger>(settings_.server, trainer_log_reports());

  std::optional<nlohmann::json> config;
  if (context.model != nullptr) config = context.model->config();
  std::vector<std::string> too_long;
  mlflow::RunSpec spec;
  spec.params = mlflow_params(to_json(args), config ? &*config : nullptr, settings_, &too_long);
  for (const auto& key : too_long)
    logging::logger()->warn(
        "--report_to mlflow: the value of \"{}\" is longer than MLflow's {} characters for a "
        "param and is not logged (MLFLOW_FLATTEN_PARAMS=true logs a nested value entry by entry)",
        key, mlflow::kMaxParamValueLength);
  spec.run_name = args.run_name.value_or("");
  spec.experiment_name = settings_.experiment_name;
  spec.experiment_id = settings_.experiment_id;
  if (settings_.nested_run)
    spec.parent_run_id = settings_.run_id;
  else
    spec.resume_run_id = settings_.run_id;
  spec.tags = {{"mlflow.user", user_name()},
               {"mlflow.source.name", program_path()},
               {"mlflow.source.type", "LOCAL"}};
  spec.tags.insert(spec.tags.end(), settings_.tags.begin(), settings_.tags.end());
  logger_->start(std::move(spec));
}

void MlflowCallback::on_train_begin(Args args, TrainerState& state, TrainerControl&, Ctx context) {
  setup(args, state, context);
}

void MlflowCallback::on_log(Args args, TrainerState& state, TrainerControl&, Ctx context) {
  setup(args, state, context);
  if (!logger_ || context.logs == nullptr) return;
  std::vector<mlflow::Metric> metrics;
  const int64_t now = mlflow::now_ms();
  for (const auto& [key, value] : context.logs->items()) {
    if (value.is_number() || value.is_boolean()) {
      const double number =
          value.is_boolean() ? (value.get<bool>() ? 1.0 : 0.0) : value.get<double>();
      metrics.push_back({mlflow::sanitize_metric_key(key), number, now, state.global_step});
    } else {
      logging::logger()->warn(
          "--report_to mlflow: the log value {} of key \"{}\" is not a number; MLflow metrics "
          "are numbers, so it is not logged",
          value.dump(), key);
    }
  }
  if (!metrics.empty()) logger_->log_metrics(std::move(metrics));
}

void MlflowCallback::on_train_end(Args, TrainerState&, TrainerControl&, Ctx) {
  if (logger_) logger_->finish("FINISHED");
}

std::string MlflowCallback::run_id() const {
  return logger_ ? logger_->run_id() : "";
}

void MlflowCallback::flush() {
  if (logger_) logger_->flush(settings_.server.http.timeout_seconds);
}

}  // namespace ctrainer
