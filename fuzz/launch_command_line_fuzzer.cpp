// ctrainer-run's command line on arbitrary bytes (one argv token per line), as
// parse_launch_command_line reads it: torchrun's flags, the static and c10d rendezvous
// (--nnodes MIN:MAX, --rdzv-endpoint, --rdzv-conf key=value,...), --redirects / --tee, SageMaker's
// defaults (none here). Bad input throws ArgumentError (NotSupportedYet is one); what parses
// keeps its invariants: MIN <= MAX, a static layout of one node count, a node rank inside it,
// a port in [1, 65535] (0: --standalone picks one).
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher/launch_options.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> tokens = ctrainer::fuzz::argv_tokens(data, size);
  // --config_file reads a file and --nproc-per-node gpu the driver's folder: not this target's.
  for (const std::string& t : tokens)
    if (t.find("config") != std::string::npos || t.find("gpu") != std::string::npos ||
        t.find("auto") != std::string::npos)
      return 0;
  try {
    const auto parsed = ctrainer::launcher::parse_launch_command_line(
        tokens, [](const std::string&) -> std::optional<std::string> { return std::nullopt; });
    if (!parsed.options) return 0;  // --help
    const auto& options = *parsed.options;
    if (options.min_nodes > options.max_nodes || options.nnodes != options.max_nodes) std::abort();
    if (!options.elastic() && options.min_nodes != options.max_nodes) std::abort();
    if (options.node_rank < 0 || options.node_rank >= options.nnodes) std::abort();
    if (options.master_port < 0 || options.master_port > 65535) std::abort();
    if (!(options.rdzv_last_call_timeout_s > 0) || !(options.rdzv_join_timeout_s > 0)) std::abort();
    if (options.command.empty()) std::abort();
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
