// run_clm's text readers on arbitrary bytes: the first byte picks the reader (.txt with or
// without line breaks kept, .jsonl, .json) or --config_overrides on a GPT-2-like config; the
// rest is the file (or the flag's value). Bad input throws ArgumentError naming the file, line or
// key. A .txt file's lines with their line breaks must give back the file (universal newlines).
#include <ctrainer/core/errors.h>
#include <ctrainer/examples/language_modeling/lm_datasets.h>
#include <ctrainer/examples/language_modeling/lm_model.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  if (size == 0) return 0;
  const std::string_view bytes = ctrainer::fuzz::bytes_of(data + 1, size - 1);
  const int mode = data[0] % 5;
  try {
    if (mode == 4) {
      const nlohmann::json defaults = {{"n_embd", 768},
                                       {"resid_pdrop", 0.1},
                                       {"scale_attn_weights", true},
                                       {"activation_function", "gelu_new"},
                                       {"bos_token_id", nullptr}};
      const nlohmann::json out = run_lm::apply_config_overrides(defaults, std::string(bytes));
      for (const auto& [key, value] : out.items())
        if (value.type() != defaults[key].type() &&
            !(value.is_number() && defaults[key].is_number()))
          std::abort();
      return 0;
    }
    const char* names[] = {"data.txt", "data.txt", "data.jsonl", "data.json"};
    const auto path = ctrainer::fuzz::scratch_file(names[mode], bytes);
    const auto examples = run_lm::read_text_examples(path.string(), mode == 0);
    if (mode == 0) {
      std::string joined, normalised;
      for (const auto& line : examples) joined += line;
      for (size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] == '\r') {
          normalised.push_back('\n');
          if (i + 1 < bytes.size() && bytes[i + 1] == '\n') ++i;
        } else {
          normalised.push_back(bytes[i]);
        }
      }
      if (joined != normalised) std::abort();
    }
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
