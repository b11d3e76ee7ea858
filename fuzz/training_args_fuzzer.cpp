// A TrainingArguments JSON config file on arbitrary bytes: `prog --config FILE`, parsed by
// ArgumentParser::parse (which ends with TrainingArguments::validate and so also reads the files
// a config names: --deepspeed, --fsdp_config). Bad input throws ArgumentError (NotSupportedYet
// and ChoiceError are ArgumentErrors). One application option of every kind is registered, as
// run_glue registers its own.
// Differential check: arguments that parse write out (to_json, what training_args.json holds)
// and parse again to the same values.
#include <cstdio>
#include <cstdlib>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/argument_parser.h>

#include "fuzz_support.h"

namespace {

struct AppValues {
  int64_t max_seq_length = 128;
  double temperature = 1.0;
  std::string task_name;
  bool pad_to_max_length = true;
  std::vector<std::string> files;
  std::optional<int64_t> max_train_samples;
};

ctrainer::ArgumentParser make_parser(AppValues& values) {
  ctrainer::ArgumentParser parser("fuzz");
  parser.add_option("max_seq_length", &values.max_seq_length, "an integer");
  parser.add_option("temperature", &values.temperature, "a number");
  parser.add_option("task_name", &values.task_name, "a string");
  parser.add_option("pad_to_max_length", &values.pad_to_max_length, "a bool");
  parser.add_option("files", &values.files, "a list");
  parser.add_option("max_train_samples", &values.max_train_samples, "an optional integer");
  parser.set_environment({});  // no SageMaker variables from this process
  return parser;
}

bool parse_config(const std::filesystem::path& path, ctrainer::TrainingArguments& args) {
  AppValues values;
  ctrainer::ArgumentParser parser = make_parser(values);
  const std::string file = path.string();
  const char* argv[] = {"prog", "--config", file.c_str()};
  return parser.parse(3, argv, args);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto path = ctrainer::fuzz::scratch_file("args.json", ctrainer::fuzz::bytes_of(data, size));
  ctrainer::TrainingArguments args;
  try {
    if (!parse_config(path, args)) return 0;
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  const nlohmann::json saved = ctrainer::to_json(args);
  const auto again_path = ctrainer::fuzz::scratch_file("training_args.json", saved.dump(2));
  ctrainer::TrainingArguments again;
  try {
    parse_config(again_path, again);
  } catch (const ctrainer::ArgumentError& e) {
    std::fprintf(stderr, "training_args_fuzzer: to_json() output does not parse: %s\n", e.what());
    std::abort();
  }
  if (ctrainer::to_json(again) != saved) {
    std::fprintf(stderr, "training_args_fuzzer: to_json() output parses to other values:\n%s\n%s\n",
                 saved.dump().c_str(), ctrainer::to_json(again).dump().c_str());
    std::abort();
  }
  return 0;
}
