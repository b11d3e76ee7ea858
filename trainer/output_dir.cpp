#include <ctrainer/trainer/output_dir.h>

#include <filesystem>

#include <ctrainer/trainer/errors.h>

namespace ctrainer {

void check_output_dir(const TrainingArguments& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!args.do_train || args.overwrite_output_dir || !fs::exists(args.output_dir, ec)) return;
  if (!fs::is_directory(args.output_dir, ec))
    throw ArgumentError("--output_dir " + args.output_dir + " exists and is not a directory");
  if (!fs::is_empty(args.output_dir, ec))
    throw ArgumentError("--output_dir " + args.output_dir +
                        " already exists and is not empty. Use --overwrite_output_dir to write "
                        "into it, or choose another directory.");
}

}  // namespace ctrainer
