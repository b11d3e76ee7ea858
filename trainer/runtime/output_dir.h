#pragma once
/// \file Guarding output_dir against accidental overwrites (HF run_glue's check).
#include <optional>
#include <string>

#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {

/// HF run_glue's check, before anything is written: training into an existing, non-empty
/// output_dir without --overwrite_output_dir is refused (ArgumentError) unless it holds a
/// complete checkpoint. Returns that newest checkpoint when training should resume from it
/// (no --resume_from_checkpoint given), which run_glue reports as "Checkpoint detected".
std::optional<std::string> check_output_dir(const TrainingArguments& args);

/// What HF's example scripts do with check_output_dir's answer: logs "Checkpoint detected,
/// resuming training at ..." and sets args.resume_from_checkpoint to it.
void resume_from_detected_checkpoint(TrainingArguments& args);

}  // namespace ctrainer
