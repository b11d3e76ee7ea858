// A generation_config.json on arbitrary bytes, read as a model folder's is: ArgumentError naming
// the file and the key, or a config that completes with transformers' defaults and builds its
// score processors (or refuses a value by name) and processes a step of scores.
// Differential check: such a config writes back (to_json, what save_pretrained writes) and reads
// again to the same JSON.
#include <cstdio>
#include <cstdlib>

#include <ATen/ATen.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/generation/generation_config.h>
#include <ctrainer/models/generation/logits_processors.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ctrainer::generation::GenerationConfig;
  ctrainer::fuzz::quiet_logging();
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(ctrainer::fuzz::bytes_of(data, size));
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  GenerationConfig config;
  try {
    config = GenerationConfig::from_json(parsed, "generation_config.json");
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  const nlohmann::json saved = config.to_json();
  try {
    const GenerationConfig again = GenerationConfig::from_json(saved, "to_json()");
    if (again.to_json() != saved) {
      std::fprintf(stderr, "generation config changed on a round trip:\n%s\n%s\n",
                   saved.dump().c_str(), again.to_json().dump().c_str());
      std::abort();
    }
  } catch (const ctrainer::ArgumentError& e) {
    std::fprintf(stderr, "an accepted generation config does not read back: %s\n%s\n", e.what(),
                 saved.dump().c_str());
    std::abort();
  }
  // One step over a small vocabulary; ids past it must be refused or ignored, never read.
  try {
    const auto resolved = config.with_global_defaults();
    const ctrainer::generation::LogitsProcessors processors(resolved, 3);
    const auto ids = at::arange(12, at::kLong).remainder(7).reshape({2, 6});
    const auto scores = processors(ids, at::randn({2, 16}));
    if (scores.sizes() != at::IntArrayRef({2, 16})) {
      std::fprintf(stderr, "processed scores have the wrong shape\n");
      std::abort();
    }
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
