// The command line on arbitrary bytes: one argv token per line, parsed by ArgumentParser::parse
// (the one-pass binder: names, aliases, --no_ flags, bool literals, lists, `--`, positional
// .json, then TrainingArguments::validate). Bad input throws ArgumentError. One application option
// of every kind is registered, as run_glue registers its own.
// Differential check: arguments that parse write out (to_json) and parse again, as a config file,
// to the same values.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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

bool parse(const std::vector<std::string>& tokens, ctrainer::TrainingArguments& args) {
  AppValues values;
  ctrainer::ArgumentParser parser("fuzz");
  parser.add_option("max_seq_length", &values.max_seq_length, "an integer");
  parser.add_option("temperature", &values.temperature, "a number");
  parser.add_option("task_name", &values.task_name, "a string");
  parser.add_option("pad_to_max_length", &values.pad_to_max_length, "a bool");
  parser.add_option("files", &values.files, "a list");
  parser.add_option("max_train_samples", &values.max_train_samples, "an optional integer");
  parser.set_environment({});  // no SageMaker variables from this process
  std::vector<const char*> argv = {"prog"};
  for (const std::string& token : tokens) argv.push_back(token.c_str());
  return parser.parse(static_cast<int>(argv.size()), argv.data(), args);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  std::vector<std::string> tokens;
  std::string token;
  for (const char c : ctrainer::fuzz::bytes_of(data, size)) {
    if (c == '\n') {
      tokens.push_back(token);
      token.clear();
    } else {
      token += c;
    }
  }
  if (!token.empty()) tokens.push_back(token);
  for (const std::string& t : tokens)
    if (t == "-h" || t == "--help" || t == "--help_markdown") return 0;  // prints, no parse
  ctrainer::TrainingArguments args;
  try {
    if (!parse(tokens, args)) return 0;
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  const nlohmann::json saved = ctrainer::to_json(args);
  const auto path = ctrainer::fuzz::scratch_file("training_args.json", saved.dump(2));
  ctrainer::TrainingArguments again;
  try {
    parse({"--config", path.string()}, again);
  } catch (const ctrainer::ArgumentError& e) {
    std::fprintf(stderr, "command_line_fuzzer: to_json() output does not parse: %s\n", e.what());
    std::abort();
  }
  if (ctrainer::to_json(again) != saved) {
    std::fprintf(stderr, "command_line_fuzzer: to_json() output parses to other values:\n%s\n%s\n",
                 saved.dump().c_str(), ctrainer::to_json(again).dump().c_str());
    std::abort();
  }
  return 0;
}
