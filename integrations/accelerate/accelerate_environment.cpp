#include <ctrainer/integrations/accelerate/accelerate_environment.h>

#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>
#include <ctrainer/integrations/accelerate/accelerate_deepspeed_plugin.h>

namespace ctrainer {
namespace {

std::optional<std::string> lookup(const EnvironmentMap& environment, const std::string& name) {
  const auto it = environment.find(name);
  if (it == environment.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

/// accelerate's str_to_bool (and transformers' strtobool): y/yes/t/true/on/1 or
/// n/no/f/false/off/0, any case.
bool flag(const EnvironmentMap& environment, const std::string& name) {
  const auto value = lookup(environment, name);
  if (!value) return false;
  const std::string text = lower(*value);
  static const std::set<std::string> yes = {"y", "yes", "t", "true", "on", "1"};
  static const std::set<std::string> no = {"n", "no", "f", "false", "off", "0"};
  if (yes.count(text)) return true;
  if (no.count(text)) return false;
  throw ArgumentError(name + "='" + *value + "' is not a truth value; use true or false");
}

/// Like NotSupportedYet, for a variable rather than a flag.
ArgumentError unsupported(const std::string& what, const std::string& instead) {
  return ArgumentError("not supported yet: " + what + " (" + instead + ")");
}

/// `name` (any case) among `names`, or its 1-based number there, as accelerate accepts
/// FSDP_SHARDING_STRATEGY=1 or FULL_SHARD; the name in `names`' spelling.
std::string enum_value(const EnvironmentMap& environment, const std::string& variable,
                       const std::string& fallback, const std::vector<std::string>& names) {
  const std::string value = lookup(environment, variable).value_or(fallback);
  const std::string upper_value = upper(value);
  for (size_t i = 0; i < names.size(); ++i)
    if (upper_value == names[i] || value == std::to_string(i + 1)) return names[i];
  throw ArgumentError(variable + "='" + value + "' is not one of " + join(names) +
                      " (or their numbers from 1)");
}

/// The FSDP_* variables that accelerate launch exports for an FSDP config (prepare_multi_gpu_env),
/// read with the defaults of accelerate's FullyShardedDataParallelPlugin, as the fsdp_config
/// object that parse_fsdp takes.
nlohmann::json fsdp_plugin_config(const EnvironmentMap& environment) {
  if (flag(environment, "FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD"))
    throw unsupported("FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD=true (from accelerate launch)",
                      "ctrainer recomputes checkpointed layers without offloading them");
  if (lookup(environment, "FSDP_IGNORED_MODULES"))
    throw unsupported("FSDP_IGNORED_MODULES (from accelerate launch)",
                      "every module is sharded; remove fsdp_ignored_modules from the config");
  nlohmann::json config = nlohmann::json::object();
  const std::string version = lookup(environment, "FSDP_VERSION").value_or("1");
  if (version != "1" && version != "2")
    throw ArgumentError("FSDP_VERSION='" + version + "' must be 1 or 2");
  config["version"] = std::stoi(version);
  if (version == "1") {
    // FSDP1 reads FSDP_SHARDING_STRATEGY (FULL_SHARD when unset), FSDP2 only
    // FSDP_RESHARD_AFTER_FORWARD.
    std::string strategy = enum_value(
        environment, "FSDP_SHARDING_STRATEGY", "FULL_SHARD",
        {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"});
    config["reshard_after_forward"] = lower(strategy);
    config["use_orig_params"] = flag(environment, "FSDP_USE_ORIG_PARAMS");
    // Unset is None: FSDP1 then prefetches nothing in backward.
    config["backward_prefetch"] = enum_value(environment, "FSDP_BACKWARD_PREFETCH", "NO_PREFETCH",
                                             {"BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH"});
  } else {
    const auto reshard = lookup(environment, "FSDP_RESHARD_AFTER_FORWARD");
    config["reshard_after_forward"] = !reshard || flag(environment, "FSDP_RESHARD_AFTER_FORWARD");
  }
  config["cpu_offload"] = flag(environment, "FSDP_OFFLOAD_PARAMS");
  const std::string policy = enum_value(environment, "FSDP_AUTO_WRAP_POLICY", "NO_WRAP",
                                        {"TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP"});
  config["auto_wrap_policy"] = policy;
  if (policy == "TRANSFORMER_BASED_WRAP") {
    // Unset: the model's _no_split_modules, as accelerate falls back on them.
    if (const auto classes = lookup(environment, "FSDP_TRANSFORMER_CLS_TO_WRAP"))
      config["transformer_layer_cls_to_wrap"] = split(*classes, ',');  // str.split(",")
  } else if (policy == "SIZE_BASED_WRAP") {
    const std::string text = lookup(environment, "FSDP_MIN_NUM_PARAMS").value_or("0");
    try {
      size_t used = 0;
      config["min_num_params"] = std::stoll(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
    } catch (const std::exception&) {
      throw ArgumentError("FSDP_MIN_NUM_PARAMS='" + text + "' is not a whole number");
    }
  }
  for (const auto& [variable, key] : std::vector<std::pair<std::string, std::string>>{
           {"FSDP_FORWARD_PREFETCH", "forward_prefetch"},
           {"FSDP_SYNC_MODULE_STATES", "sync_module_states"},
           {"FSDP_CPU_RAM_EFFICIENT_LOADING", "cpu_ram_efficient_loading"},
           {"FSDP_ACTIVATION_CHECKPOINTING", "activation_checkpointing"}})
    config[key] = flag(environment, variable);
  if (const auto type = lookup(environment, "FSDP_STATE_DICT_TYPE"))
    config["state_dict_type"] =
        enum_value(environment, "FSDP_STATE_DICT_TYPE", *type,
                   {"FULL_STATE_DICT", "LOCAL_STATE_DICT", "SHARDED_STATE_DICT"});
  return config;
}

}  // namespace

AccelerateLaunchEnvironment read_accelerate_environment(const EnvironmentMap& environment) {
  AccelerateLaunchEnvironment launch;
  if (const auto precision = lookup(environment, "ACCELERATE_MIXED_PRECISION")) {
    const std::string value = lower(*precision);
    if (value == "fp16" || value == "bf16") {
      launch.mixed_precision = value;
    } else if (value == "fp8") {
      throw unsupported("ACCELERATE_MIXED_PRECISION=fp8 (from accelerate launch)",
                        "set mixed_precision to bf16 or no in the accelerate config");
    } else if (value != "no") {
      throw ArgumentError("ACCELERATE_MIXED_PRECISION='" + *precision +
                          "' is not one of no, fp16, bf16, fp8 (accelerate launch sets it from "
                          "the config's mixed_precision)");
    }
  }
  launch.use_cpu = flag(environment, "ACCELERATE_USE_CPU");
  launch.use_deepspeed = flag(environment, "ACCELERATE_USE_DEEPSPEED");
  if (launch.use_deepspeed)
    launch.deepspeed_config = accelerate_deepspeed_plugin_config(environment);
  // The Accelerator turns these plugins on when the variable is "true" (any case).
  if (lower(lookup(environment, "ACCELERATE_USE_FSDP").value_or("")) == "true")
    launch.fsdp_config = fsdp_plugin_config(environment);
  if (launch.use_deepspeed && launch.fsdp_config)
    throw ArgumentError(
        "ACCELERATE_USE_DEEPSPEED=true and ACCELERATE_USE_FSDP=true together: an accelerate "
        "config has one distributed_type, DEEPSPEED or FSDP; unset one of the variables");
  if (lower(lookup(environment, "ACCELERATE_USE_MEGATRON_LM").value_or("")) == "true")
    throw unsupported("ACCELERATE_USE_MEGATRON_LM=true (from accelerate launch)",
                      "ctrainer has no Megatron-LM tensor parallelism");
  const std::string dynamo = lookup(environment, "ACCELERATE_DYNAMO_BACKEND").value_or("NO");
  if (lower(dynamo) != "no")
    throw unsupported("ACCELERATE_DYNAMO_BACKEND=" + dynamo + " (from accelerate launch)",
                      "torch.compile is Python's; set dynamo_backend: 'NO' in the accelerate "
                      "config");
  if (flag(environment, "ACCELERATE_DEBUG_MODE"))
    throw unsupported("ACCELERATE_DEBUG_MODE=true (from accelerate launch --debug)",
                      "accelerate's collective shape checks; launch without --debug");
  return launch;
}

}  // namespace ctrainer
