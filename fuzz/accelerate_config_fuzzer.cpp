// ctrainer-run --config_file on arbitrary bytes: accelerate's config file (YAML or JSON) read
// through yaml-cpp and checked key by key. Bad input throws ArgumentError naming the file and
// the key or position; anything else escaping (YAML::Exception, a stack overflow in the YAML
// parser, std::out_of_range, std::regex_error, ...) is a finding. A config that parses gives
// workers an environment of known variables (FSDP's and DeepSpeed's included).
#include <cstdlib>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher/accelerate_config.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto config = ctrainer::launcher::parse_accelerate_config(
        ctrainer::fuzz::bytes_of(data, size), "config.yaml");
    if (config.distributed_type != "NO" && config.distributed_type != "MULTI_CPU" &&
        config.distributed_type != "DEEPSPEED" && config.distributed_type != "MULTI_GPU" &&
        config.distributed_type != "FSDP")
      std::abort();
    for (const auto& [name, value] : config.worker_environment())
      if (name != "ACCELERATE_MIXED_PRECISION" && name != "ACCELERATE_USE_CPU" &&
          name != "CUDA_VISIBLE_DEVICES" && name != "ACCELERATE_USE_FSDP" &&
          name.rfind("FSDP_", 0) != 0 && name != "ACCELERATE_USE_DEEPSPEED" &&
          name != "ACCELERATE_CONFIG_DS_FIELDS" && name.rfind("ACCELERATE_DEEPSPEED_", 0) != 0 &&
          name.rfind("ACCELERATE_GRADIENT_", 0) != 0)
        std::abort();
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
