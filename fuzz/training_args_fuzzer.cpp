// A TrainingArguments JSON config file on arbitrary bytes: `prog --config FILE`, parsed by
// ArgumentParser::parse (which ends with TrainingArguments::validate and so also reads the files
// a config names: --deepspeed, --fsdp_config). Bad input throws ArgumentError (NotSupportedYet
// and ChoiceError are ArgumentErrors). One application option of every kind is registered, as
// run_glue registers its own.
// Differential check: arguments that parse write out (to_json, what training_args.json holds)
// and parse again to the same values.
#include "args_fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto path = ctrainer::fuzz::scratch_file("args.json", ctrainer::fuzz::bytes_of(data, size));
  ctrainer::TrainingArguments args;
  try {
    if (!ctrainer::fuzz::parse_arguments({"--config", path.string()}, args)) return 0;
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  ctrainer::fuzz::check_arguments_round_trip(args, "training_args_fuzzer");
  return 0;
}
