#pragma once
/// \file --report_to: which experiment-tracking integrations receive the logs.
#include <memory>
#include <vector>

#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer {

/// The callbacks of the integrations named by --report_to: "tensorboard" (TensorBoardCallback),
/// "mlflow" (MlflowCallback: throws ArgumentError when its environment is wrong); "all" gives
/// every integration built into this ctrainer that can run, as HF's "all" gives every one
/// installed: TensorBoard, and MLflow when MLFLOW_TRACKING_URI is set (and
/// DISABLE_MLFLOW_INTEGRATION is not true); "none" gives none (the JSON-lines file in
/// output_dir is always written). Names of integrations that have not landed are refused by
/// TrainingArguments::validate().
std::vector<std::shared_ptr<TrainerCallback>> report_to_callbacks(const TrainingArguments& args);

}  // namespace ctrainer
