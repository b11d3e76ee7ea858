#pragma once
/// \file The deepspeed_config section of accelerate's config file as `accelerate launch` passes
/// it to the processes it starts (prepare_deepspeed_cmd_env): which keys exist, how a value is
/// written into a variable (Python's str() of what PyYAML read), and the variables themselves.
/// Part of ctrainer-run (no torch).
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace YAML {
class Node;
}

namespace ctrainer::launcher {

/// Python's str() of the value PyYAML's safe_load reads from a scalar: "True"/"False" for YAML
/// 1.1 booleans, a decimal integer without underscores or sign, a float as repr() writes it
/// (1.0, 0.5, 1e-05), any other or quoted text as written; std::nullopt for null.
std::optional<std::string> python_str_of_yaml(const YAML::Node& scalar);

/// Whether `key` is one of the deepspeed_config keys `accelerate config` writes.
bool is_deepspeed_config_key(const std::string& key);

/// The variables accelerate launch adds for distributed_type DEEPSPEED: ACCELERATE_USE_DEEPSPEED,
/// ACCELERATE_CONFIG_DS_FIELDS (the section's keys and mixed_precision, lower case) and one
/// variable per key given (ACCELERATE_DEEPSPEED_ZERO_STAGE, ACCELERATE_GRADIENT_CLIPPING, ...;
/// accelerate passes no NVMe path, host file or filter on). `where` prefixes messages. Throws
/// ArgumentError for DeepSpeed's own multi-machine launchers (pdsh, openmpi, ...), which start
/// every machine's workers over ssh from one: ctrainer-run runs on each machine, as
/// deepspeed_multinode_launcher: standard does.
void add_deepspeed_environment(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& section,
    int64_t num_machines, const std::string& where, std::map<std::string, std::string>& env);

}  // namespace ctrainer::launcher
