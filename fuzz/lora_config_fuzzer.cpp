// A PEFT adapter_config.json on arbitrary bytes, read as --lora_config reads it: ArgumentError
// naming the file and the key, or a config that validates.
// Differential check: such a config writes back (to_json, what the adapter folder gets) and
// reads again to the same JSON.
#include <cstdio>
#include <cstdlib>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/lora/lora_config.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(ctrainer::fuzz::bytes_of(data, size));
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  ctrainer::LoraConfig config;
  try {
    config = ctrainer::LoraConfig::from_json(parsed, "adapter_config.json");
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  (void)config.scaling();
  const nlohmann::json saved = config.to_json();
  try {
    const ctrainer::LoraConfig again = ctrainer::LoraConfig::from_json(saved, "to_json()");
    if (again.to_json() != saved) {
      std::fprintf(stderr, "adapter config changed on a round trip:\n%s\n%s\n",
                   saved.dump().c_str(), again.to_json().dump().c_str());
      std::abort();
    }
  } catch (const ctrainer::ArgumentError& e) {
    std::fprintf(stderr, "an accepted adapter config does not read back: %s\n%s\n", e.what(),
                 saved.dump().c_str());
    std::abort();
  }
  return 0;
}
