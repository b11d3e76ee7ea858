// accelerate launch's variables on arbitrary bytes, as our programs read them: the parts of the
// input (split at "@@" lines) are the DeepSpeed JSON file (ACCELERATE_DEEPSPEED_CONFIG_FILE),
// ACCELERATE_CONFIG_DS_FIELDS, ACCELERATE_DEEPSPEED_ZERO_STAGE, ACCELERATE_GRADIENT_CLIPPING,
// ACCELERATE_GRADIENT_ACCUMULATION_STEPS, FSDP_SHARDING_STRATEGY and FSDP_MIN_NUM_PARAMS; the
// first byte picks DeepSpeed with or without the file, or FSDP. Bad input throws ArgumentError
// naming the variable or file; anything else escaping (a type_error from a value of the wrong
// JSON type, std::out_of_range from a number, ...) is a finding. A DeepSpeed config that is
// built is a JSON object with a zero_optimization section and both precision sections.
#include <cstdlib>
#include <string>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/accelerate/accelerate_deepspeed_plugin.h>
#include <ctrainer/integrations/accelerate/accelerate_environment.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % 3;
  const auto parts = ctrainer::fuzz::split_parts(ctrainer::fuzz::bytes_of(data + 1, size - 1), 7);
  const auto part = [&](size_t i) {
    return i < parts.size() ? std::string(parts[i]) : std::string();
  };
  ctrainer::EnvironmentMap environment = {{"ACCELERATE_CONFIG_DS_FIELDS", part(1)},
                                          {"ACCELERATE_DEEPSPEED_ZERO_STAGE", part(2)},
                                          {"ACCELERATE_GRADIENT_CLIPPING", part(3)},
                                          {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", part(4)},
                                          {"FSDP_SHARDING_STRATEGY", part(5)},
                                          {"FSDP_AUTO_WRAP_POLICY", "SIZE_BASED_WRAP"},
                                          {"FSDP_MIN_NUM_PARAMS", part(6)}};
  environment[mode == 2 ? "ACCELERATE_USE_FSDP" : "ACCELERATE_USE_DEEPSPEED"] = "true";
  if (mode == 1)
    environment["ACCELERATE_DEEPSPEED_CONFIG_FILE"] =
        ctrainer::fuzz::scratch_file("ds_config.json", parts.empty() ? "" : parts[0]).string();
  try {
    const auto launch = ctrainer::read_accelerate_environment(environment);
    if (!launch.deepspeed_config) return 0;
    for (const char* precision : {"no", "fp16", "bf16"}) {
      nlohmann::json config = *launch.deepspeed_config;
      try {
        ctrainer::apply_deepspeed_mixed_precision(config, precision);
      } catch (const ctrainer::ArgumentError&) {
        continue;
      }
      if (!config.is_object() || !config.contains("zero_optimization") ||
          !config["fp16"].is_object() || !config["bf16"].is_object())
        std::abort();
    }
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
