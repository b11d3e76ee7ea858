#pragma once
/// \file --report_to: which experiment-tracking integrations receive the logs.
#include <memory>
#include <vector>

#include <ctrainer/trainer/callbacks/trainer_callback.h>
#include <ctrainer/trainer/training_args.h>

namespace ctrainer {

/// The callbacks of the integrations named by --report_to: "tensorboard" (TensorBoardCallback);
/// "all" gives every integration built into this ctrainer (TensorBoard), as HF's "all" gives
/// every one installed; "none" gives none (the JSON-lines file in output_dir is always
/// written). Names of integrations that have not landed are refused by
/// TrainingArguments::validate().
std::vector<std::shared_ptr<TrainerCallback>> report_to_callbacks(const TrainingArguments& args);

}  // namespace ctrainer
