// A SageMaker job's environment on arbitrary bytes: the parts of the input (split at "@@" lines)
// are SM_HPS, SM_HP_MP_PARAMETERS, SM_FRAMEWORK_PARAMS, one SM_HP_<NAME> variable and the
// checkpointconfig.json that SageMaker writes for spot jobs. Bad input throws ArgumentError naming
// the variable or file; anything else escaping (nlohmann::json::exception for a number too large
// for a double, a type_error from a value of the wrong JSON type, ...) is a finding. Whatever the
// checkpoint configuration says, a job that reads one trains in its folder.
#include <cstdlib>
#include <string>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>
#include <ctrainer/integrations/sagemaker/sagemaker_parallelism.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ctrainer::fuzz::split_parts;
  ctrainer::fuzz::quiet_logging();
  const auto parts = split_parts(ctrainer::fuzz::bytes_of(data, size), 5);
  const auto part = [&](size_t i) {
    return i < parts.size() ? std::string(parts[i]) : std::string();
  };
  ctrainer::EnvironmentMap environment = {{"SM_HPS", part(0)},
                                          {"SM_HP_MP_PARAMETERS", part(1)},
                                          {"SM_FRAMEWORK_PARAMS", part(2)},
                                          {"SM_HP_REPORT_TO", part(3)},
                                          {"SM_MODEL_DIR", "/opt/ml/model"}};
  if (parts.size() > 4)
    environment["SM_CHECKPOINT_CONFIG_FILE"] =
        ctrainer::fuzz::scratch_file("checkpointconfig.json", parts[4]).string();
  const auto lookup = [&](const std::string& name) -> std::optional<std::string> {
    const auto it = environment.find(name);
    if (it == environment.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
  try {
    (void)ctrainer::read_sagemaker_parallelism(lookup);
  } catch (const ctrainer::ArgumentError&) {
  }
  std::optional<std::string> checkpoints;
  try {
    checkpoints = ctrainer::sagemaker_checkpoint_dir(environment);
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  try {
    const auto values = ctrainer::sagemaker_flag_values(environment);
    if (values.empty() || values.front().flag != "output_dir" ||
        values.front().tokens != std::vector<std::string>{checkpoints.value_or("/opt/ml/model")})
      std::abort();
    for (const auto& value : values)
      if (value.flag.empty() || value.source.empty()) std::abort();
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
