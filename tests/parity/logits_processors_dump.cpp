// ctrainer_parity_logits_dump: one generation step's score processing (LogitsProcessors) for
// generation_config.json files, on inputs from safetensors files, for
// tests/parity/logits_processors_parity.py to compare with transformers' LogitsProcessorList.
//
//   ctrainer_parity_logits_dump --cases cases.json
//
// cases.json: a list of {"config": FILE, "prompt_length": N, "inputs": FILE, "output": FILE},
// all run in this one process. Each config is read as a model's generation_config.json and
// completed with transformers' global defaults. Inputs: input_ids [B, L] int64, scores [B, V]
// float32, optional attention_mask [B, N] (the prompt's). Output: the processed scores. Prints
// one JSON line per case: {"steps": [transformers class names]} or {"error": message}.
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/generation/generation_config.h>
#include <ctrainer/models/generation/logits_processors.h>

#include "dump_flags.h"

namespace {

nlohmann::json run_case(const nlohmann::json& c) {
  using namespace ctrainer::generation;
  try {
    const auto config =
        GenerationConfig::from_file(c.at("config").get<std::string>()).with_global_defaults();
    auto inputs = ctrainer::load_safetensors(c.at("inputs").get<std::string>()).tensors;
    const at::Tensor mask =
        inputs.count("attention_mask") ? inputs["attention_mask"] : at::Tensor();
    const LogitsProcessors processors(config, c.at("prompt_length").get<int64_t>(), mask);
    const at::Tensor scores = processors(inputs.at("input_ids"), inputs.at("scores"));
    ctrainer::save_safetensors(c.at("output").get<std::string>(),
                               {{"scores", scores.contiguous()}});
    return {{"steps", processors.names()}};
  } catch (const ctrainer::ArgumentError& e) {
    return {{"error", e.what()}};
  }
}

}  // namespace

int main(int argc, char** argv) {
  return ctrainer::parity::run_cases_main(argc, argv, "ctrainer_parity_logits_dump", run_case);
}
