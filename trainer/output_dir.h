#pragma once
/// \file Guarding output_dir against accidental overwrites (HF run_glue's check).
#include <ctrainer/trainer/training_args.h>

namespace ctrainer {

/// Throws ArgumentError when training would write into an existing, non-empty output_dir and
/// --overwrite_output_dir is not set. Call it before anything is written.
void check_output_dir(const TrainingArguments& args);

}  // namespace ctrainer
