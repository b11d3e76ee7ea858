#pragma once
/// \file Guarding output_dir against accidental overwrites (HF run_glue's check).
#include <optional>
#include <string>

#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>
#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {

/// HF run_glue's check, before anything is written: training into an existing, non-empty
/// output_dir without --overwrite_output_dir is refused (ArgumentError) unless it holds a
/// complete checkpoint. Returns that newest checkpoint when training should resume from it
/// (no --resume_from_checkpoint given), which run_glue reports as "Checkpoint detected".
/// SageMaker's checkpoint folder (sagemaker_checkpoint_dir of `environment`) is the job's own: a
/// spot restart before the first checkpoint finds it non-empty (logs, a half-written save) and
/// starts from scratch there instead of stopping. `environment` defaults to this process's.
std::optional<std::string> check_output_dir(
    const TrainingArguments& args, const EnvironmentMap& environment = process_environment());

/// What HF's example scripts do with check_output_dir's answer: logs "Checkpoint detected,
/// resuming training at ..." and sets args.resume_from_checkpoint to it.
void resume_from_detected_checkpoint(TrainingArguments& args);

}  // namespace ctrainer
