// The command line on arbitrary bytes: one argv token per line, parsed by ArgumentParser::parse
// (the one-pass binder: names, aliases, --no_ flags, bool literals, lists, `--`, positional
// .json, then TrainingArguments::validate). Bad input throws ArgumentError.
// Differential check: arguments that parse write out and parse back to the same values.
#include <string>
#include <vector>

#include "args_fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const std::vector<std::string> tokens = ctrainer::fuzz::argv_tokens(data, size);
  for (const std::string& t : tokens)
    if (t == "-h" || t == "--help" || t == "--help_markdown") return 0;  // prints, no parse
  ctrainer::TrainingArguments args;
  try {
    if (!ctrainer::fuzz::parse_arguments(tokens, args)) return 0;
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  ctrainer::fuzz::check_arguments_round_trip(args, "command_line_fuzzer");
  return 0;
}
