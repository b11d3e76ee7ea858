#pragma once
/// \file --report_to mlflow: HF's MLflowCallback, logging over MLflow's tracking REST API
/// (integrations/mlflow/) from a background thread, so the tracking server never slows or
/// stops training.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/integrations/mlflow/mlflow_settings.h>
#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer {

namespace mlflow {
class RunLogger;
}

/// HF's MLflowCallback on the world's main process only. At train begin (once): a run is
/// created in MLFLOW_EXPERIMENT_NAME (created when missing; else MLFLOW_EXPERIMENT_ID, else
/// "Default") named --run_name, tagged with MLFLOW_TAGS and MLflow's system tags
/// (mlflow.user, mlflow.source.name, mlflow.source.type); with MLFLOW_RUN_ID that run is
/// reopened instead, or with MLFLOW_NESTED_RUN true a new run is nested under it (a C++ process
/// has no "active run": the run MLFLOW_RUN_ID names plays that part; without MLFLOW_RUN_ID a
/// nested run is a top-level one, as in MLflow with no active run). The params are the model's
/// config then the arguments (mlflow_params). Each log: its numbers (booleans as 1/0) as
/// metrics at the global step, keys sanitised as HF does; other values dropped with a warning.
/// Train end: the run is marked FINISHED (logs after it, such as a final evaluation, still go
/// to the run); a run never ended (training threw) is marked FAILED when the callback goes.
/// Server errors are warnings (see RunLogger).
class MlflowCallback : public TrainerCallback {
 public:
  /// Reads the settings from this process's environment; throws ArgumentError (see
  /// mlflow::read_settings).
  MlflowCallback();
  explicit MlflowCallback(mlflow::Settings settings);
  ~MlflowCallback() override;
  std::string name() const override { return "MLflowCallback"; }
  void on_train_begin(Args args, TrainerState& state, TrainerControl&, Ctx context) override;
  void on_log(Args args, TrainerState& state, TrainerControl&, Ctx context) override;
  void on_train_end(Args args, TrainerState& state, TrainerControl&, Ctx) override;

  /// The run's id once the server created it (empty before, elsewhere than on the main process,
  /// or when the server could not be reached).
  std::string run_id() const;
  /// Waits until what was logged so far reached the server or was given up.
  void flush();

 private:
  void setup(Args args, const TrainerState& state, Ctx context);
  mlflow::Settings settings_;
  std::unique_ptr<mlflow::RunLogger> logger_;
  bool initialized_ = false;
};

/// HF's MLflowCallback params: the model config's entries, then the arguments' (an argument
/// wins over a config entry of the same name), flattened with "." when settings.flatten_params,
/// values as Python's str() writes them; values longer than MLflow's limit (6000 characters)
/// are left out and their keys added to `too_long`; then only the first
/// settings.max_log_params are kept.
mlflow::KeyValues mlflow_params(const nlohmann::json& arguments, const nlohmann::json* model_config,
                                const mlflow::Settings& settings,
                                std::vector<std::string>* too_long);

}  // namespace ctrainer
