#include <ctrainer/trainer/runtime/output_dir.h>

#include <filesystem>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>

namespace ctrainer {

std::optional<std::string> check_output_dir(const TrainingArguments& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!args.do_train || args.overwrite_output_dir || !fs::exists(args.output_dir, ec))
    return std::nullopt;
  if (!fs::is_directory(args.output_dir, ec))
    throw ArgumentError("--output_dir " + args.output_dir + " exists and is not a directory");
  if (auto latest = latest_complete_checkpoint(args.output_dir))
    return args.resume_from_checkpoint ? std::nullopt
                                       : std::optional<std::string>(latest->string());
  if (!fs::is_empty(args.output_dir, ec))
    throw ArgumentError("--output_dir " + args.output_dir +
                        " already exists and is not empty. Use --overwrite_output_dir to write "
                        "into it, or choose another directory.");
  return std::nullopt;
}

}  // namespace ctrainer
