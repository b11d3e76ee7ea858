// --fsdp and --fsdp_config on arbitrary bytes: the first line is the --fsdp value, the rest the
// fsdp_config file, read as TrainingArguments::validate reads them: fsdp_enabled,
// read_fsdp_config, parse_fsdp. Bad input throws ArgumentError naming the flag or key.
#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/fsdp_config.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const std::string_view bytes = ctrainer::fuzz::bytes_of(data, size);
  const size_t newline = bytes.find('\n');
  const std::string fsdp(bytes.substr(0, newline));
  const std::string_view config_text =
      newline == std::string_view::npos ? std::string_view() : bytes.substr(newline + 1);
  try {
    (void)ctrainer::fsdp_enabled(fsdp);
    nlohmann::json config = nlohmann::json::object();
    if (!config_text.empty())
      config = ctrainer::read_fsdp_config(
          ctrainer::fuzz::scratch_file("fsdp_config.json", config_text).string());
    const ctrainer::FsdpSetup setup = ctrainer::parse_fsdp(fsdp, config, "--fsdp_config fuzz");
    (void)setup.config.dump();
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
