#include <ctrainer/integrations/accelerate/accelerate_deepspeed_plugin.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_config.h>
#include <ctrainer/core/strings.h>

namespace ctrainer {
namespace {

using nlohmann::json;

constexpr const char* kConfigFile = "ACCELERATE_DEEPSPEED_CONFIG_FILE";

/// os.environ.get(name, fallback): a variable set to "" is "", not the fallback.
std::string variable(const EnvironmentMap& environment, const std::string& name,
                     const std::string& fallback) {
  const auto it = environment.find(name);
  return it == environment.end() ? fallback : it->second;
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\n\r\f\v");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\n\r\f\v") - first + 1);
}

/// Python's int(text) for the plain spellings (surrounding blanks, a sign, digits).
int64_t python_int(const std::string& name, const std::string& text) {
  const std::string value = trimmed(text);
  char* end = nullptr;
  const long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end != value.c_str() + value.size())
    throw ArgumentError(name + "='" + text +
                        "' is not a whole number (accelerate launch writes "
                        "the config's zero_stage there: 0, 1, 2 or 3)");
  return parsed;
}

/// Python's float(text), finite values only.
double python_float(const std::string& name, const std::string& text) {
  const std::string value = trimmed(text);
  char* end = nullptr;
  const double parsed = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(parsed))
    throw ArgumentError(name + "='" + text +
                        "' is not a finite number (accelerate launch writes "
                        "the config's gradient_clipping there, e.g. 1.0)");
  return parsed;
}

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

/// HfDeepSpeedConfig(path).config: the file's JSON object (accelerate also takes inline JSON or
/// base64 there, which accelerate launch never writes).
json read_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ArgumentError(std::string(kConfigFile) + "=" + path +
                        ": no such file (accelerate launch passes the config's "
                        "deepspeed_config_file; fix its path)");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json config;
  try {
    config = parse_json_config(text, path, "deepspeed");
  } catch (const ArgumentError& error) {
    throw ArgumentError(std::string(kConfigFile) + ": " + error.what());
  }
  if (!config.is_object())
    throw ArgumentError(std::string(kConfigFile) + "=" + path +
                        " does not hold a JSON object (a DeepSpeed config)");
  return config;
}

/// HfDeepSpeedConfig.find_config_node: the object holding the dotted key's last part, or null
/// when a node on the way is missing; a node that is not an object is refused (accelerate
/// fails on it with AttributeError).
json* find_node(json& config, const std::string& dotted, std::string& last) {
  std::vector<std::string> nodes = split(dotted, '.');
  last = nodes.back();
  nodes.pop_back();
  json* node = &config;
  std::string path;
  for (const std::string& name : nodes) {
    path += (path.empty() ? "" : ".") + name;
    const auto it = node->find(name);
    if (it == node->end() || it->is_null()) return nullptr;
    if (!it->is_object())
      throw ArgumentError(std::string(kConfigFile) + ": \"" + path + "\" is " + it->dump() +
                          ", not an object of DeepSpeed settings");
    node = &*it;
  }
  return node;
}

/// DeepSpeedPlugin.fill_match(key, must_match=False): an "auto" value becomes `value`.
void fill_auto(json& config, const std::string& dotted, const json& value) {
  std::string last;
  json* node = find_node(config, dotted, last);
  if (node != nullptr && node->contains(last) && (*node)[last] == "auto") (*node)[last] = value;
}

/// The accelerate config's settings that a deepspeed_config_file replaces
/// (DeepSpeedPlugin._deepspeed_config_checks), as ACCELERATE_CONFIG_DS_FIELDS names them.
const std::vector<std::string> kReplacedByConfigFile = {
    "gradient_accumulation_steps", "gradient_clipping",      "zero_stage",
    "offload_optimizer_device",    "offload_param_device",   "offload_param_nvme_path",
    "offload_optimizer_nvme_path", "zero3_save_16bit_model", "mixed_precision"};

}  // namespace

json accelerate_deepspeed_plugin_config(const EnvironmentMap& environment) {
  if (const auto moe = environment.find("ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES");
      moe != environment.end() && !moe->second.empty())
    throw ArgumentError(
        "not supported yet: ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES=" + moe->second +
        " (from accelerate launch; ctrainer has no mixture-of-experts models: "
        "remove deepspeed_moe_layer_cls_names from the accelerate config)");
  // The plugin's own values (DeepSpeedPlugin.__post_init__).
  const std::string gas_text =
      variable(environment, "ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "auto");
  const json gradient_accumulation_steps =
      all_digits(gas_text) ? json(python_int("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", gas_text))
                           : json(gas_text);
  const std::string clipping_text = variable(environment, "ACCELERATE_GRADIENT_CLIPPING", "auto");
  const json gradient_clipping =
      clipping_text == "auto" ? json("auto")
                              : json(python_float("ACCELERATE_GRADIENT_CLIPPING", clipping_text));
  const int64_t zero_stage =
      python_int("ACCELERATE_DEEPSPEED_ZERO_STAGE",
                 variable(environment, "ACCELERATE_DEEPSPEED_ZERO_STAGE", "2"));
  const std::string optimizer_device =
      variable(environment, "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "none");
  const std::string param_device =
      variable(environment, "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "none");
  const std::string optimizer_nvme =
      variable(environment, "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH", "none");
  const std::string param_nvme =
      variable(environment, "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_NVME_PATH", "none");
  const bool save_16bit = lower(variable(environment, "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL",
                                         "false")) == "true";

  const std::string file = variable(environment, kConfigFile, "none");
  if (file != "none") {
    json config = read_config_file(file);
    if (!config.contains("gradient_accumulation_steps")) config["gradient_accumulation_steps"] = 1;
    if (!config.contains("zero_optimization"))
      throw ArgumentError(std::string(kConfigFile) + "=" + file +
                          " has no \"zero_optimization\" section; accelerate asks for one "
                          "(\"zero_optimization\": {\"stage\": 2})");
    for (const std::string& field :
         split(variable(environment, "ACCELERATE_CONFIG_DS_FIELDS", ""), ','))
      for (const std::string& replaced : kReplacedByConfigFile)
        if (field == replaced)
          throw ArgumentError("the accelerate config sets " + field +
                              " next to "
                              "deepspeed_config_file (ACCELERATE_CONFIG_DS_FIELDS): with a "
                              "DeepSpeed file, set " +
                              join(kReplacedByConfigFile) +
                              " in that file and remove them from the accelerate config");
    const std::vector<std::pair<std::string, json>> plugin_values = {
        {"gradient_accumulation_steps", gradient_accumulation_steps},
        {"gradient_clipping", gradient_clipping},
        {"zero_optimization.stage", zero_stage},
        {"zero_optimization.offload_optimizer.device", optimizer_device},
        {"zero_optimization.offload_param.device", param_device},
        {"zero_optimization.offload_param.nvme_path", param_nvme},
        {"zero_optimization.offload_optimizer.nvme_path", optimizer_nvme},
        {"zero_optimization.stage3_gather_16bit_weights_on_model_save", save_16bit}};
    for (const auto& [key, value] : plugin_values) fill_auto(config, key, value);
    return config;
  }
  json config = {
      {"train_batch_size", "auto"},
      {"train_micro_batch_size_per_gpu", "auto"},
      {"gradient_accumulation_steps", gradient_accumulation_steps},
      {"zero_optimization",
       {{"stage", zero_stage},
        {"offload_optimizer",
         {{"device", optimizer_device},
          {"nvme_path", optimizer_device == "nvme" ? json(optimizer_nvme) : json(nullptr)}}},
        {"offload_param",
         {{"device", param_device},
          {"nvme_path", param_device == "nvme" ? json(param_nvme) : json(nullptr)}}},
        {"stage3_gather_16bit_weights_on_model_save", save_16bit}}}};
  // `if self.gradient_clipping:` — "auto" is true, 0.0 is not.
  if (gradient_clipping.is_string() || gradient_clipping.get<double>() != 0.0)
    config["gradient_clipping"] = gradient_clipping;
  return config;
}

void apply_deepspeed_mixed_precision(json& config, const std::string& mixed_precision) {
  if (mixed_precision == "fp16" && !config.contains("fp16"))
    config["fp16"] = {{"enabled", true}, {"auto_cast", true}};
  if (mixed_precision == "bf16" && !config.contains("bf16")) config["bf16"] = {{"enabled", true}};
  for (const char* type : {"fp16", "bf16"}) {
    if (config.contains(type) && !config[type].is_object())
      throw ArgumentError(std::string("the DeepSpeed config of accelerate launch: \"") + type +
                          "\" is " + config[type].dump() + ", not an object ({\"enabled\": ...})");
  }
  if (mixed_precision != "no") {
    const std::string other = mixed_precision == "fp16" ? "bf16" : "fp16";
    // str(ds_config.get(other, {}).get("enabled", "False")).lower() == "true"
    if (config.contains(other) && config[other].contains("enabled")) {
      const json& enabled = config[other]["enabled"];
      const bool on = enabled.is_boolean()
                          ? enabled.get<bool>()
                          : enabled.is_string() && lower(enabled.get<std::string>()) == "true";
      if (on)
        throw ArgumentError("mixed precision " + mixed_precision +
                            " (ACCELERATE_MIXED_PRECISION or --" + mixed_precision + ") with \"" +
                            other +
                            "\" enabled in the DeepSpeed config of accelerate launch: choose one");
    }
  }
  for (const char* type : {"fp16", "bf16"})
    if (!config.contains(type)) config[type] = {{"enabled", false}};
  fill_auto(config, "fp16.enabled", mixed_precision == "fp16");
  fill_auto(config, "bf16.enabled", mixed_precision == "bf16");
}

}  // namespace ctrainer
