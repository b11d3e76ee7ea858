#include <ctrainer/trainer/runtime/sagemaker_outputs.h>

#include <filesystem>
#include <functional>
#include <string>

#include <ctrainer/distributed/process_info.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer {
namespace {

namespace fs = std::filesystem;

bool is_result_file(const std::string& name) {
  return name.ends_with("_results.json") || name == "trainer_state.json" ||
         (name.starts_with("predict_results_") && name.ends_with(".txt")) ||
         name == "generated_predictions.txt";
}

/// Copies the regular files directly in `from` that `wanted` accepts into `to`; how many.
int copy_files(const fs::path& from, const fs::path& to,
               const std::function<bool(const std::string&)>& wanted) {
  fs::create_directories(to);
  int copied = 0;
  for (const auto& entry : fs::directory_iterator(from)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || !wanted(name)) continue;
    fs::copy_file(entry.path(), to / name, fs::copy_options::overwrite_existing);
    ++copied;
  }
  return copied;
}

bool same_folder(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

}  // namespace

void publish_sagemaker_outputs(const TrainingArguments& args, const EnvironmentMap& environment) {
  const auto model_dir = sagemaker_model_dir(environment);
  const auto data_dir = sagemaker_output_data_dir(environment);
  if ((!model_dir && !data_dir) || !fs::is_directory(args.output_dir) ||
      !ProcessInfo::from_environment(args.local_rank).is_world_process_zero())
    return;
  auto log = logging::logger();
  if (model_dir && !same_folder(*model_dir, args.output_dir)) {
    const int copied =
        copy_files(args.output_dir, *model_dir, [](const std::string&) { return true; });
    log->info("The final model's {} files copied from {} to {} (SM_MODEL_DIR)", copied,
              args.output_dir, *model_dir);
  }
  if (data_dir) {
    copy_files(args.output_dir, *data_dir, is_result_file);
    log->info("Result files copied to {} (SM_OUTPUT_DATA_DIR)", *data_dir);
  }
}

}  // namespace ctrainer
