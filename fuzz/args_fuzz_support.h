#pragma once
// What the two argument fuzzers share (training_args: a JSON config; command_line: argv): a parser
// with one application option of every kind, as run_glue registers its own, and the differential
// check that arguments which parse write out (to_json, what training_args.json holds) and parse
// back, as a config file, to the same values.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/argument_parser.h>

#include "fuzz_support.h"

namespace ctrainer::fuzz {

/// Parses `tokens` (argv without the program) into `args` with a parser like run_glue's.
inline bool parse_arguments(const std::vector<std::string>& tokens, TrainingArguments& args) {
  int64_t max_seq_length = 128;
  double temperature = 1.0;
  std::string task_name;
  bool pad_to_max_length = true;
  std::vector<std::string> files;
  std::optional<int64_t> max_train_samples;
  ArgumentParser parser("fuzz");
  parser.add_option("max_seq_length", &max_seq_length, "an integer");
  parser.add_option("temperature", &temperature, "a number");
  parser.add_option("task_name", &task_name, "a string");
  parser.add_option("pad_to_max_length", &pad_to_max_length, "a bool");
  parser.add_option("files", &files, "a list");
  parser.add_option("max_train_samples", &max_train_samples, "an optional integer");
  parser.set_environment({});  // no SageMaker variables from this process
  std::vector<const char*> argv = {"prog"};
  for (const std::string& token : tokens) argv.push_back(token.c_str());
  return parser.parse(static_cast<int>(argv.size()), argv.data(), args);
}

/// Aborts (a finding, named after `fuzzer`) unless `args` written out by to_json parses back to
/// the same values.
inline void check_arguments_round_trip(const TrainingArguments& args, const char* fuzzer) {
  const nlohmann::json saved = to_json(args);
  const auto path = scratch_file("training_args.json", saved.dump(2));
  TrainingArguments again;
  try {
    parse_arguments({"--config", path.string()}, again);
  } catch (const ArgumentError& e) {
    std::fprintf(stderr, "%s: to_json() output does not parse: %s\n", fuzzer, e.what());
    std::abort();
  }
  if (to_json(again) != saved) {
    std::fprintf(stderr, "%s: to_json() output parses to other values:\n%s\n%s\n", fuzzer,
                 saved.dump().c_str(), to_json(again).dump().c_str());
    std::abort();
  }
}

}  // namespace ctrainer::fuzz
