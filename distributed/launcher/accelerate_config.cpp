#include <ctrainer/distributed/launcher/accelerate_config.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include <yaml-cpp/yaml.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>
#include <ctrainer/distributed/launcher/accelerate_deepspeed_section.h>

namespace ctrainer::launcher {
namespace {

/// yaml-cpp parses nested flow collections ("[[[[...") by recursion: deeper input than this is
/// refused before parsing, so a hostile file cannot overflow the stack. Real configs nest 2
/// levels.
constexpr int64_t kMaxFlowDepth = 64;

/// A YAML 1.1 boolean as PyYAML's safe_load reads it (true/false, yes/no, on/off, y/n, any
/// case); nothing for other text.
std::optional<bool> yaml_boolean(const std::string& text) {
  const std::string value = lower(text);
  if (value == "true" || value == "yes" || value == "on" || value == "y") return true;
  if (value == "false" || value == "no" || value == "off" || value == "n") return false;
  return std::nullopt;
}

/// A key of the file and where it is, for messages.
struct Entry {
  std::string key;
  YAML::Node value;
};

class ConfigReader {
 public:
  explicit ConfigReader(std::string source) : source_(std::move(source)) {}

  ArgumentError error(const Entry& entry, const std::string& what) const {
    return ArgumentError(source_ + ":" + std::to_string(entry.value.Mark().line + 1) + ": " +
                         entry.key + ": " + what);
  }

  /// "not supported yet" with the reason and what to do instead.
  ArgumentError unsupported(const Entry& entry, const std::string& why) const {
    return error(entry, "not supported yet by ctrainer-run (" + why + ")");
  }

  static bool is_null(const Entry& entry) { return !entry.value || entry.value.IsNull(); }

  std::string text(const Entry& entry) const {
    if (!entry.value.IsScalar()) throw error(entry, "expected a text value");
    return entry.value.Scalar();
  }

  /// YAML 1.1 booleans, as PyYAML's safe_load reads them (true/false, yes/no, on/off).
  bool boolean(const Entry& entry) const {
    if (entry.value.IsScalar())
      if (const auto value = yaml_boolean(entry.value.Scalar())) return *value;
    throw error(entry, "expected true or false");
  }

  int64_t integer(const Entry& entry, int64_t min, int64_t max) const {
    const std::string value = entry.value.IsScalar() ? entry.value.Scalar() : std::string();
    int64_t parsed = 0;
    bool ok = !value.empty();
    try {
      size_t used = 0;
      parsed = std::stoll(value, &used);
      ok = ok && used == value.size();
    } catch (const std::exception&) {
      ok = false;
    }
    if (!ok || parsed < min || parsed > max)
      throw error(entry, "expected a whole number in [" + std::to_string(min) + ", " +
                             std::to_string(max) + "], got '" + value + "'");
    return parsed;
  }

  /// An empty section ({} or null) is what accelerate writes when a plugin is unused.
  static bool is_empty_section(const Entry& entry) {
    return is_null(entry) || (entry.value.IsMap() && entry.value.size() == 0);
  }

 private:
  std::string source_;
};

/// Checks that `text` nests flow collections at most kMaxFlowDepth deep (counting brackets
/// anywhere, also inside quotes: an over-estimate is harmless for a config file).
void check_flow_depth(std::string_view text, const std::string& source) {
  int64_t depth = 0;
  for (const char c : text) {
    if (c == '[' || c == '{') {
      if (++depth > kMaxFlowDepth)
        throw ArgumentError(source + ": nested more than " + std::to_string(kMaxFlowDepth) +
                            " levels deep; an accelerate config nests 2");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

YAML::Node load_yaml(std::string_view text, const std::string& source) {
  check_flow_depth(text, source);
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw ArgumentError(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                        std::to_string(e.mark.column + 1) + ": not valid YAML or JSON (" + e.msg +
                        ")");
  }
}

/// The keys of accelerate 1.15's ClusterConfig (BaseConfig's first), and the two old keys its
/// process_config still converts (fp16, dynamo_backend).
const std::vector<std::string>& known_keys() {
  static const std::vector<std::string> keys = {"compute_environment",
                                                "distributed_type",
                                                "mixed_precision",
                                                "use_cpu",
                                                "debug",
                                                "num_processes",
                                                "machine_rank",
                                                "num_machines",
                                                "gpu_ids",
                                                "main_process_ip",
                                                "main_process_port",
                                                "rdzv_backend",
                                                "same_network",
                                                "main_training_function",
                                                "enable_cpu_affinity",
                                                "fp8_config",
                                                "deepspeed_config",
                                                "fsdp_config",
                                                "parallelism_config",
                                                "megatron_lm_config",
                                                "mpirun_config",
                                                "downcast_bf16",
                                                "tpu_name",
                                                "tpu_zone",
                                                "tpu_use_cluster",
                                                "tpu_use_sudo",
                                                "command_file",
                                                "commands",
                                                "tpu_vm",
                                                "tpu_env",
                                                "dynamo_config",
                                                "fp16",
                                                "dynamo_backend"};
  return keys;
}

/// "0,1" or a YAML list [0, 1]: CUDA device indices.
std::string parse_gpu_ids(const ConfigReader& reader, const Entry& entry) {
  std::vector<std::string> ids;
  if (entry.value.IsSequence()) {
    for (const auto& item : entry.value) ids.push_back(item.IsScalar() ? item.Scalar() : "?");
  } else {
    std::stringstream list(reader.text(entry));
    for (std::string id; std::getline(list, id, ',');) ids.push_back(id);
  }
  std::string joined;
  for (std::string id : ids) {
    id.erase(0, id.find_first_not_of(' '));
    id.erase(id.find_last_not_of(' ') + 1);
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
      throw reader.error(entry, "expected all or GPU indices such as 0,1 (got '" + id + "')");
    joined += (joined.empty() ? "" : ",") + id;
  }
  if (joined.empty()) throw reader.error(entry, "expected all or GPU indices such as 0,1");
  return joined;
}

/// Applies one key to `config`, or refuses it.
void apply_key(const ConfigReader& reader, const Entry& entry, AccelerateConfig& config) {
  const std::string& key = entry.key;
  const bool null = ConfigReader::is_null(entry);
  if (key == "compute_environment") {
    const std::string value = null ? "LOCAL_MACHINE" : reader.text(entry);
    if (value == "AMAZON_SAGEMAKER")
      throw reader.unsupported(entry,
                               "accelerate starts SageMaker jobs from this machine; run "
                               "ctrainer-run inside the job, where SM_HOSTS and SM_CURRENT_HOST "
                               "give the layout");
    if (value != "LOCAL_MACHINE")
      throw reader.error(entry, "expected LOCAL_MACHINE or AMAZON_SAGEMAKER, got '" + value + "'");
  } else if (key == "distributed_type") {
    config.distributed_type = reader.text(entry);
  } else if (key == "mixed_precision" || key == "fp16") {
    std::string value = null ? "no" : reader.text(entry);
    if (key == "fp16") value = reader.boolean(entry) ? "fp16" : "no";
    if (value == "false" || value == "False") value = "no";  // PyYAML reads a bare no as false
    if (value == "fp8")
      throw reader.unsupported(entry, "ctrainer trains in fp32, fp16 or bf16; use bf16");
    if (value != "no" && value != "fp16" && value != "bf16")
      throw reader.error(entry, "expected no, fp16, bf16 or fp8, got '" + value + "'");
    // An old file may give both keys: accelerate's process_config keeps mixed_precision.
    if (key == "mixed_precision" || config.mixed_precision == "no") config.mixed_precision = value;
  } else if (key == "use_cpu") {
    config.use_cpu = config.use_cpu || reader.boolean(entry);
  } else if (key == "debug" || key == "enable_cpu_affinity" || key == "downcast_bf16" ||
             key == "tpu_use_cluster" || key == "tpu_use_sudo") {
    if (!null && reader.boolean(entry)) {
      const std::string why = key == "debug" ? "accelerate's collective shape checks"
                              : key == "enable_cpu_affinity"
                                  ? "NUMA pinning of the workers; pin with numactl"
                                  : "a TPU setting; ctrainer runs on CPU and CUDA";
      throw reader.unsupported(entry, why + "; set it to false");
    }
  } else if (key == "num_processes") {
    if (!null) {
      const int64_t value = reader.integer(entry, -1, 1 << 20);
      if (value == 0) throw reader.error(entry, "expected a positive number of processes");
      if (value > 0) config.num_processes = value;
    }
  } else if (key == "num_machines") {
    if (!null) config.num_machines = reader.integer(entry, 1, 1 << 20);
  } else if (key == "machine_rank") {
    if (!null) config.machine_rank = reader.integer(entry, 0, 1 << 20);
  } else if (key == "gpu_ids") {
    if (!null && !(entry.value.IsScalar() && entry.value.Scalar() == "all"))
      config.gpu_ids = parse_gpu_ids(reader, entry);
  } else if (key == "main_process_ip") {
    if (!null) config.main_process_ip = reader.text(entry);
    if (config.main_process_ip && config.main_process_ip->empty())
      throw reader.error(entry, "the address is empty; give a host name or IP, or null");
  } else if (key == "main_process_port") {
    if (!null) config.main_process_port = static_cast<int>(reader.integer(entry, 0, 65535));
  } else if (key == "rdzv_backend") {
    const std::string value = null ? "static" : reader.text(entry);
    if (value != "static")
      throw reader.unsupported(entry, "rendezvous backend " + value +
                                          ": ctrainer-run reads a static layout from this "
                                          "file; use static with machine_rank on each machine, "
                                          "or for an elastic job give the flags (--nnodes "
                                          "MIN:MAX --rdzv-backend c10d ...) instead of the file");
  } else if (key == "same_network") {
    if (!null) reader.boolean(entry);  // static rendezvous: the same store either way
  } else if (key == "main_training_function") {
    if (!null) reader.text(entry);  // notebook_launcher's; a program has main()
  } else if (key == "fsdp_config") {
    if (!ConfigReader::is_empty_section(entry)) {
      if (!entry.value.IsMap()) throw reader.error(entry, "expected a section of keys (or {})");
      config.fsdp_config_line = entry.value.Mark().line + 1;
      for (const auto& item : entry.value) {
        if (!item.first.IsScalar() || !(item.second.IsScalar() || item.second.IsNull()))
          throw reader.error(entry, "expected one value per key, such as fsdp_version: 2");
        if (!item.second.IsNull()) config.fsdp_config[item.first.Scalar()] = item.second.Scalar();
      }
    }
  } else if (key == "deepspeed_config") {
    if (!ConfigReader::is_empty_section(entry)) {
      if (!entry.value.IsMap()) throw reader.error(entry, "expected a section of keys (or {})");
      config.deepspeed_config_line = entry.value.Mark().line + 1;
      for (const auto& item : entry.value) {
        const std::string name = item.first.IsScalar() ? item.first.Scalar() : "?";
        if (!is_deepspeed_config_key(name))
          throw reader.error(entry, name +
                                        " is not a key of accelerate's DeepSpeed settings; remove "
                                        "it or fix its name (e.g. zero_stage, "
                                        "gradient_accumulation_steps, deepspeed_config_file)");
        if (!(item.second.IsScalar() || item.second.IsNull()))
          throw reader.error(entry, "expected one value per key, such as zero_stage: 3");
        config.deepspeed_config.emplace_back(name, python_str_of_yaml(item.second));
      }
    }
  } else if (key == "megatron_lm_config" || key == "fp8_config") {
    // accelerate reads these only with distributed_type MEGATRON_LM or mixed_precision fp8,
    // which are refused above and below.
    if (!ConfigReader::is_empty_section(entry) && !entry.value.IsMap())
      throw reader.error(entry, "expected a section of keys (or {})");
  } else if (key == "dynamo_config" || key == "dynamo_backend") {
    if (key == "dynamo_config" && !ConfigReader::is_empty_section(entry) && !entry.value.IsMap())
      throw reader.error(entry, "expected a section of keys (or {})");
    const YAML::Node section = entry.value;  // const: a missing key is not inserted
    const YAML::Node backend = key == "dynamo_backend" ? section
                               : section.IsMap()       ? section["dynamo_backend"]
                                                       : YAML::Node();
    const std::string value = upper(backend && backend.IsScalar() ? backend.Scalar() : "NO");
    if (!ConfigReader::is_empty_section(entry) && value != "NO")
      throw reader.unsupported(entry, "torch.compile is Python's; set dynamo_backend: 'NO'");
  } else if (key == "parallelism_config" || key == "mpirun_config") {
    bool used = false;
    if (!ConfigReader::is_empty_section(entry)) {
      if (!entry.value.IsMap()) throw reader.error(entry, "expected a section of keys (or {})");
      for (const auto& item : entry.value) used = used || !item.second.IsNull();
    }
    if (used)
      throw reader.unsupported(entry, key == "mpirun_config"
                                          ? "ctrainer-run starts the workers itself; to use "
                                            "mpirun, start the program with mpirun directly"
                                          : "tensor / context parallelism; remove the section");
  } else if (key == "tpu_name" || key == "tpu_zone" || key == "command_file" || key == "commands" ||
             key == "tpu_vm" || key == "tpu_env") {
    // `accelerate config` writes tpu_env: [] on every machine.
    const bool empty_list = entry.value.IsSequence() && entry.value.size() == 0;
    if (!null && !empty_list)
      throw reader.unsupported(entry, "a TPU setting; ctrainer runs on CPU and CUDA");
  }
}

void check_distributed_type(const std::string& source, const YAML::Node& root,
                            const std::string& value) {
  const std::string where = source + ":" +
                            std::to_string(root["distributed_type"].Mark().line + 1) +
                            ": distributed_type: ";
  if (value == "NO" || value == "MULTI_CPU" || value == "MULTI_GPU" || value == "FSDP" ||
      value == "DEEPSPEED")
    return;
  static const std::set<std::string> other_devices = {"MULTI_NPU",    "MULTI_MLU", "MULTI_SDAA",
                                                      "MULTI_MUSA",   "MULTI_XPU", "MULTI_HPU",
                                                      "MULTI_NEURON", "XLA",       "MEGATRON_LM"};
  if (other_devices.count(value))
    throw ArgumentError(where + value +
                        " is not available: ctrainer runs on CPU (MULTI_CPU) and CUDA (MULTI_GPU)");
  throw ArgumentError(where + "expected NO, MULTI_CPU, MULTI_GPU, FSDP or DEEPSPEED, got '" +
                      value + "'");
}

/// fsdp_config's keys (the fsdp_ prefix is optional, as accelerate adds it) with the defaults of
/// accelerate launch's --fsdp_* flags, and how prepare_multi_gpu_env writes each: str(value), or
/// str(value).lower() for the booleans.
struct FsdpKey {
  const char* key;
  const char* variable;
  const char* fallback;  ///< nullptr: the variable is only set when the key is given
  bool lowered;
};
constexpr FsdpKey kFsdpKeys[] = {
    {"fsdp_version", "FSDP_VERSION", "1", false},
    {"fsdp_sharding_strategy", "FSDP_SHARDING_STRATEGY", "FULL_SHARD", false},
    {"fsdp_reshard_after_forward", "FSDP_RESHARD_AFTER_FORWARD", "true", true},
    {"fsdp_offload_params", "FSDP_OFFLOAD_PARAMS", "false", true},
    {"fsdp_min_num_params", "FSDP_MIN_NUM_PARAMS", "100000000", false},
    {"fsdp_auto_wrap_policy", "FSDP_AUTO_WRAP_POLICY", nullptr, false},
    {"fsdp_transformer_layer_cls_to_wrap", "FSDP_TRANSFORMER_CLS_TO_WRAP", nullptr, false},
    {"fsdp_backward_prefetch", "FSDP_BACKWARD_PREFETCH", nullptr, false},
    {"fsdp_state_dict_type", "FSDP_STATE_DICT_TYPE", nullptr, false},
    {"fsdp_forward_prefetch", "FSDP_FORWARD_PREFETCH", "false", true},
    {"fsdp_use_orig_params", "FSDP_USE_ORIG_PARAMS", "true", true},
    {"fsdp_cpu_ram_efficient_loading", "FSDP_CPU_RAM_EFFICIENT_LOADING", "true", true},
    {"fsdp_sync_module_states", "FSDP_SYNC_MODULE_STATES", "true", true},
    {"fsdp_activation_checkpointing", "FSDP_ACTIVATION_CHECKPOINTING", "false", true},
    {"fsdp_activation_checkpointing_offload", "FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD", "false",
     true},
    {"fsdp_ignored_modules", "FSDP_IGNORED_MODULES", nullptr, false},
};

/// Python's str() of a YAML boolean (True/False) before .lower(): any spelling PyYAML reads as
/// a boolean gives "true" or "false".
std::string lowered_boolean(const std::string& text) {
  if (const auto value = yaml_boolean(text)) return *value ? "true" : "false";
  return lower(text);
}

/// The FSDP_* variables accelerate launch exports for this fsdp_config (prepare_multi_gpu_env).
void add_fsdp_environment(const AccelerateConfig& config, std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> given;
  for (const auto& [name, value] : config.fsdp_config)
    given[name.rfind("fsdp_", 0) == 0 ? name : "fsdp_" + name] = value;
  const auto where = [&] {
    return config.source + ":" + std::to_string(config.fsdp_config_line) + ": fsdp_config: ";
  };
  for (const auto& entry : given) {
    const std::string& name = entry.first;  // (not a structured binding: clang < 16 lambdas)
    const bool known = std::any_of(std::begin(kFsdpKeys), std::end(kFsdpKeys),
                                   [&](const FsdpKey& k) { return name == k.key; });
    // The old name in HF's FSDP example; accelerate launch reads no flag of that name.
    if (!known && name != "fsdp_backward_prefetch_policy")
      throw ArgumentError(where() + name +
                          " is not a key of accelerate's FSDP plugin; remove it or fix its name "
                          "(e.g. fsdp_sharding_strategy, fsdp_auto_wrap_policy)");
  }
  env["ACCELERATE_USE_FSDP"] = "true";
  for (const FsdpKey& k : kFsdpKeys) {
    const auto it = given.find(k.key);
    if (it == given.end() && k.fallback == nullptr) continue;
    const std::string value = it != given.end() ? it->second : k.fallback;
    env[k.variable] = k.lowered ? lowered_boolean(value) : value;
  }
  if (env["FSDP_CPU_RAM_EFFICIENT_LOADING"] == "true" && env["FSDP_SYNC_MODULE_STATES"] != "true")
    throw ArgumentError(where() +
                        "fsdp_cpu_ram_efficient_loading needs fsdp_sync_module_states: true (as "
                        "accelerate launch requires)");
}

}  // namespace

std::map<std::string, std::string> AccelerateConfig::worker_environment() const {
  // The programs read these as HF's TrainingArguments does (read_accelerate_environment).
  std::map<std::string, std::string> env = {{"ACCELERATE_MIXED_PRECISION", mixed_precision}};
  if (use_cpu) env["ACCELERATE_USE_CPU"] = "True";  // Python's str(True), as accelerate writes it
  if (gpu_ids) env["CUDA_VISIBLE_DEVICES"] = *gpu_ids;
  if (distributed_type == "FSDP") add_fsdp_environment(*this, env);
  if (distributed_type == "DEEPSPEED")
    add_deepspeed_environment(
        deepspeed_config, num_machines.value_or(1),
        source + ":" + std::to_string(deepspeed_config_line) + ": deepspeed_config: ", env);
  return env;
}

AccelerateConfig parse_accelerate_config(std::string_view text, const std::string& source) {
  const YAML::Node root = load_yaml(text, source);
  if (!root || root.IsNull())
    throw ArgumentError(source +
                        ": the file is empty; write one with `accelerate config` or see "
                        "docs/launching.md");
  if (!root.IsMap())
    throw ArgumentError(source + ": expected keys such as distributed_type: MULTI_CPU at the top");
  const ConfigReader reader(source);
  AccelerateConfig config;
  config.source = source;
  std::set<std::string> seen;
  for (const auto& item : root) {
    const Entry entry{item.first.IsScalar() ? item.first.Scalar() : std::string("?"), item.second};
    if (!item.first.IsScalar())
      throw ArgumentError(source + ":" + std::to_string(item.first.Mark().line + 1) +
                          ": a key must be a name");
    if (!seen.insert(entry.key).second) throw reader.error(entry, "given twice; keep one");
    const auto& keys = known_keys();
    if (std::find(keys.begin(), keys.end(), entry.key) == keys.end())
      throw reader.error(entry, "not a key of accelerate's config file (it has: " + join(keys) +
                                    "); remove it or fix its name");
    apply_key(reader, entry, config);
  }
  if (!seen.count("distributed_type"))
    throw ArgumentError(source +
                        ": no distributed_type (accelerate requires one): add distributed_type: "
                        "MULTI_CPU, MULTI_GPU or NO");
  check_distributed_type(source, root, config.distributed_type);
  if (config.distributed_type == "MULTI_CPU") config.use_cpu = true;
  if (config.distributed_type == "NO") {
    // accelerate's simple launcher starts one process whatever num_processes says.
    if (config.num_processes.value_or(1) != 1 || config.num_machines.value_or(1) != 1)
      throw ArgumentError(source +
                          ": distributed_type NO starts one process; use MULTI_CPU or MULTI_GPU "
                          "for num_processes " +
                          std::to_string(config.num_processes.value_or(1)) + " on " +
                          std::to_string(config.num_machines.value_or(1)) + " machine(s)");
    config.num_processes = 1;
  }
  if (config.distributed_type == "DEEPSPEED" && config.use_cpu)
    throw ArgumentError(source +
                        ": distributed_type DEEPSPEED with use_cpu: true: accelerate launch then "
                        "starts no DeepSpeed at all; use MULTI_CPU and pass --deepspeed to the "
                        "program, or set use_cpu: false (a machine without GPUs still trains on "
                        "its CPU)");
  // Checks fsdp_config and deepspeed_config now, before anything starts.
  if (config.distributed_type == "FSDP" || config.distributed_type == "DEEPSPEED")
    config.worker_environment();
  return config;
}

AccelerateConfig read_accelerate_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ArgumentError("--config_file " + path +
                        ": cannot be read (does it exist? `accelerate config` writes one)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_accelerate_config(text.str(), path);
}

}  // namespace ctrainer::launcher
