#include <ctrainer/trainer/callbacks/report_to.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/mlflow/mlflow_settings.h>
#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>
#include <ctrainer/trainer/callbacks/mlflow_callback.h>
#include <ctrainer/trainer/callbacks/tensorboard_callback.h>

namespace ctrainer {

std::vector<std::shared_ptr<TrainerCallback>> report_to_callbacks(const TrainingArguments& args) {
  std::vector<std::shared_ptr<TrainerCallback>> callbacks;
  for (const auto& name : args.report_to) {
    if (name == "none") continue;
    if (name == "tensorboard" || name == "all")
      callbacks.push_back(std::make_shared<TensorBoardCallback>());
    if (name == "mlflow" || (name == "all" && mlflow::mlflow_configured(process_environment())))
      callbacks.push_back(std::make_shared<MlflowCallback>());
    if (name != "tensorboard" && name != "mlflow" && name != "all")
      throw NotSupportedYet("report_to", name + " integration");
  }
  return callbacks;
}

}  // namespace ctrainer
