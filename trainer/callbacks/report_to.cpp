#include <ctrainer/trainer/callbacks/report_to.h>

#include <ctrainer/trainer/core/errors.h>

namespace ctrainer {

std::vector<std::shared_ptr<TrainerCallback>> report_to_callbacks(const TrainingArguments& args) {
  for (const auto& name : args.report_to)
    if (name != "none" && name != "all") throw NotSupportedYet("report_to", name + " integration");
  return {};
}

}  // namespace ctrainer
