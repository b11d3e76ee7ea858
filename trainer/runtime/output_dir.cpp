#include <ctrainer/trainer/runtime/output_dir.h>

#include <filesystem>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer {

namespace {

/// Whether `output_dir` is SageMaker's checkpoint folder (compared as absolute, normal paths).
bool is_sagemaker_checkpoint_dir(const std::string& output_dir, const EnvironmentMap& environment) {
  namespace fs = std::filesystem;
  const auto checkpoints = sagemaker_checkpoint_dir(environment);
  std::error_code ec;
  return checkpoints &&
         fs::weakly_canonical(*checkpoints, ec) == fs::weakly_canonical(output_dir, ec);
}

}  // namespace

std::optional<std::string> check_output_dir(const TrainingArguments& args,
                                            const EnvironmentMap& environment) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!args.do_train || args.overwrite_output_dir || !fs::exists(args.output_dir, ec))
    return std::nullopt;
  if (!fs::is_directory(args.output_dir, ec))
    throw ArgumentError("--output_dir " + args.output_dir + " exists and is not a directory");
  if (auto latest = latest_complete_checkpoint(args.output_dir))
    return args.resume_from_checkpoint ? std::nullopt
                                       : std::optional<std::string>(latest->string());
  if (!fs::is_empty(args.output_dir, ec) &&
      !is_sagemaker_checkpoint_dir(args.output_dir, environment))
    throw ArgumentError("--output_dir " + args.output_dir +
                        " already exists and is not empty. Use --overwrite_output_dir to write "
                        "into it, or choose another directory.");
  return std::nullopt;
}

void resume_from_detected_checkpoint(TrainingArguments& args) {
  if (auto last = check_output_dir(args)) {
    logging::logger()->info(
        "Checkpoint detected, resuming training at {}. To avoid this behavior, change the "
        "--output_dir or add --overwrite_output_dir to train from scratch.",
        *last);
    args.resume_from_checkpoint = *last;
  }
}

}  // namespace ctrainer
