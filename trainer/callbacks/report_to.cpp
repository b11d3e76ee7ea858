#include <ctrainer/trainer/callbacks/report_to.h>

#include <ctrainer/trainer/callbacks/tensorboard_callback.h>
#include <ctrainer/trainer/core/errors.h>

namespace ctrainer {

std::vector<std::shared_ptr<TrainerCallback>> report_to_callbacks(const TrainingArguments& args) {
  std::vector<std::shared_ptr<TrainerCallback>> callbacks;
  for (const auto& name : args.report_to) {
    if (name == "none") continue;
    if (name == "tensorboard" || name == "all")
      callbacks.push_back(std::make_shared<TensorBoardCallback>());
    else
      throw NotSupportedYet("report_to", name + " integration");
  }
  return callbacks;
}

}  // namespace ctrainer
