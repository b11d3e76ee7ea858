// A model's config.json on arbitrary bytes, read as --config_name / --model_name_or_path read it:
// BertConfig::from_json_file (ArgumentError naming the file and the key), validate
// (ArgumentError), and the derived values the model is built from.
// Differential check: a config that reads and validates writes back (to_json, what save()
// writes) and reads again to the same JSON.
#include <cstdio>
#include <cstdlib>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/bert/bert_config.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto path =
      ctrainer::fuzz::scratch_file("config.json", ctrainer::fuzz::bytes_of(data, size));
  ctrainer::BertConfig config;
  try {
    config = ctrainer::BertConfig::from_json_file(path.string());
    config.validate(path.string());
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  (void)config.head_dim();
  // Up to kMaxNumLabels labels are valid, and their maps take time linear in the count (3.5 s
  // natively, over libFuzzer's 20 s under ASan, for 940512): not what this target explores.
  if (config.num_labels() > 10'000) return 0;
  (void)config.effective_classifier_dropout();
  const nlohmann::json saved = config.to_json();
  try {
    const ctrainer::BertConfig again = ctrainer::BertConfig::from_json(saved, "to_json()");
    again.validate("to_json()");
    if (again.to_json() != saved) {
      std::fprintf(stderr, "bert_config_fuzzer: to_json() reads back to another config:\n%s\n%s\n",
                   saved.dump().c_str(), again.to_json().dump().c_str());
      std::abort();
    }
  } catch (const ctrainer::ArgumentError& e) {
    std::fprintf(stderr, "bert_config_fuzzer: to_json() output does not read back: %s\n", e.what());
    std::abort();
  }
  return 0;
}
