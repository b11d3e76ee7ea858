// A config.json of any registered family on arbitrary bytes, read as AutoConfig reads it
// (model_type, or architectures, picks the family: bert, gpt2, ...): ArgumentError naming the
// input and the key, or a config that validates.
// Differential check: such a config writes back (to_json, what save_pretrained writes) and reads
// again, through the registry, to the same JSON.
#include <cstdio>
#include <cstdlib>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/registry/model_registry.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(ctrainer::fuzz::bytes_of(data, size));
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  // Label maps take time linear in num_labels (bert_config_fuzzer): not explored here.
  if (parsed.is_object() && parsed.contains("num_labels") &&
      parsed["num_labels"].is_number_integer() && parsed["num_labels"].get<int64_t>() > 10'000)
    return 0;
  std::unique_ptr<ctrainer::ModelConfig> config;
  try {
    config = ctrainer::AutoConfig::from_json(parsed, "config.json");
    config->validate("config.json");
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  (void)config->vocab_size();
  (void)config->max_positions();
  (void)config->num_labels();
  const nlohmann::json saved = config->to_json();
  try {
    const auto again = ctrainer::AutoConfig::from_json(saved, "to_json()");
    again->validate("to_json()");
    if (again->model_type() != config->model_type() || again->to_json() != saved) {
      std::fprintf(stderr, "model_config_fuzzer: to_json() reads back to another config:\n%s\n%s\n",
                   saved.dump().c_str(), again->to_json().dump().c_str());
      std::abort();
    }
  } catch (const ctrainer::ArgumentError& e) {
    std::fprintf(stderr, "model_config_fuzzer: to_json() output does not read back: %s\n",
                 e.what());
    std::abort();
  }
  return 0;
}
