#include <ctrainer/models/lora/lora_config.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>

namespace ctrainer {
namespace {

namespace fs = std::filesystem;

// PEFT 0.21's adapter_config.json keys that ctrainer does not implement. A file may carry them
// (PEFT writes every key) as long as their value turns the feature off.
const std::set<std::string>& unimplemented_keys() {
  static const std::set<std::string> keys = {"alora_invocation_tokens",
                                             "alpha_pattern",
                                             "arrow_config",
                                             "corda_config",
                                             "ensure_weight_tying",
                                             "eva_config",
                                             "kasa_config",
                                             "layer_replication",
                                             "layers_pattern",
                                             "layers_to_transform",
                                             "loftq_config",
                                             "lora_bias",
                                             "lora_ga_config",
                                             "megatron_config",
                                             "monteclora_config",
                                             "rank_pattern",
                                             "target_parameters",
                                             "trainable_token_indices",
                                             "use_bdlora",
                                             "use_dora",
                                             "use_qalora",
                                             "velora_config"};
  return keys;
}

// Keys that describe the file rather than the adapter: read and not used.
const std::set<std::string>& informational_keys() {
  static const std::set<std::string> keys = {"auto_mapping", "inference_mode",    "megatron_core",
                                             "peft_version", "qalora_group_size", "revision"};
  return keys;
}

bool turns_off(const nlohmann::json& value) {
  return value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
         ((value.is_object() || value.is_array()) && value.empty());
}

[[noreturn]] void refuse(const std::string& source, const std::string& key,
                         const std::string& reason) {
  throw ArgumentError(source + ": \"" + key + "\" " + reason);
}

std::vector<std::string> string_list(const nlohmann::json& value, const std::string& source,
                                     const std::string& key) {
  if (value.is_null()) return {};
  if (!value.is_array()) refuse(source, key, "must be a list of module names");
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string()) refuse(source, key, "must be a list of module names (strings)");
    out.push_back(item.get<std::string>());
  }
  return out;
}

double number(const nlohmann::json& value, const std::string& source, const std::string& key) {
  if (!value.is_number()) refuse(source, key, "must be a number, not " + value.dump());
  return value.get<double>();
}

}  // namespace

double LoraConfig::scaling() const {
  return use_rslora ? lora_alpha / std::sqrt(static_cast<double>(r))
                    : lora_alpha / static_cast<double>(r);
}

void LoraConfig::validate(const std::string& source) const {
  if (r <= 0) refuse(source, "r", "must be a positive rank, not " + std::to_string(r));
  if (!std::isfinite(lora_alpha)) refuse(source, "lora_alpha", "must be a finite number");
  if (!(lora_dropout >= 0.0 && lora_dropout < 1.0))
    refuse(source, "lora_dropout", fmt::format("must be in [0, 1), not {}", lora_dropout));
  if (init_lora_weights != "true" && init_lora_weights != "false" &&
      init_lora_weights != "gaussian")
    refuse(source, "init_lora_weights",
           "is \"" + init_lora_weights +
               "\"; ctrainer initialises with true, false or \"gaussian\" (PiSSA, OLoRA, LoftQ, "
               "EVA, CorDA and orthogonal are not implemented)");
  if (all_linear && (!target_modules.empty() || target_regex))
    refuse(source, "target_modules", "cannot be \"all-linear\" and a list or pattern at once");
}

LoraConfig LoraConfig::from_json(const nlohmann::json& json, const std::string& source) {
  if (!json.is_object())
    throw ArgumentError(source + ": a PEFT adapter config must be a JSON object");
  LoraConfig config;
  bool saw_peft_type = false;
  for (const auto& [key, value] : json.items()) {
    if (key == "peft_type") {
      saw_peft_type = true;
      if (value != "LORA")
        refuse(source, key,
               "is " + value.dump() + "; ctrainer trains LoRA adapters only (peft_type \"LORA\")");
    } else if (key == "r") {
      if (!value.is_number_integer()) refuse(source, key, "must be an integer rank");
      config.r = value.get<int64_t>();
    } else if (key == "lora_alpha") {
      config.lora_alpha = number(value, source, key);
    } else if (key == "lora_dropout") {
      config.lora_dropout = number(value, source, key);
    } else if (key == "target_modules") {
      if (value.is_string()) {
        const std::string text = value.get<std::string>();
        std::string lower = text;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (lower == "all-linear")
          config.all_linear = true;
        else
          config.target_regex = text;
      } else {
        config.target_modules = string_list(value, source, key);
      }
    } else if (key == "exclude_modules") {
      if (value.is_string())
        refuse(source, key, "as a regular expression is not supported; give a list of names");
      config.exclude_modules = string_list(value, source, key);
    } else if (key == "modules_to_save") {
      config.modules_to_save = string_list(value, source, key);
    } else if (key == "use_rslora") {
      if (!value.is_boolean()) refuse(source, key, "must be true or false");
      config.use_rslora = value.get<bool>();
    } else if (key == "fan_in_fan_out") {
      if (!value.is_boolean()) refuse(source, key, "must be true or false");
      config.fan_in_fan_out = value.get<bool>();
    } else if (key == "init_lora_weights") {
      if (value.is_boolean())
        config.init_lora_weights = value.get<bool>() ? "true" : "false";
      else if (value.is_string())
        config.init_lora_weights = value.get<std::string>();
      else
        refuse(source, key, "must be true, false or a method name");
    } else if (key == "bias") {
      if (value != "none")
        refuse(source, key,
               "is " + value.dump() +
                   "; ctrainer trains LoRA with bias \"none\" only (the base "
                   "layers' biases stay frozen)");
    } else if (key == "task_type") {
      if (!value.is_null() && !value.is_string()) refuse(source, key, "must be a string or null");
      config.task_type = value.is_string() ? value.get<std::string>() : "";
    } else if (key == "base_model_name_or_path") {
      if (value.is_string()) config.base_model_name_or_path = value.get<std::string>();
    } else if (unimplemented_keys().count(key)) {
      if (!turns_off(value))
        refuse(source, key,
               "is " + value.dump() +
                   ": this PEFT feature is not implemented in ctrainer "
                   "(remove the key or set it to null/false/empty)");
    } else if (!informational_keys().count(key)) {
      if (!turns_off(value))
        refuse(source, key, "is not a PEFT LoraConfig key ctrainer knows; remove it");
    }
  }
  if (!saw_peft_type) throw ArgumentError(source + ": no \"peft_type\" (PEFT writes \"LORA\")");
  config.validate(source);
  return config;
}

LoraConfig LoraConfig::from_file(const std::string& path) {
  fs::path file = path;
  if (fs::is_directory(file)) file /= "adapter_config.json";
  nlohmann::json json;
  try {
    json = read_json_file(file, "PEFT adapter config");
  } catch (const std::runtime_error& e) {
    throw ArgumentError(e.what());
  }
  return from_json(json, file.string());
}

nlohmann::json LoraConfig::to_json() const {
  nlohmann::json json = nlohmann::json::object();
  json["peft_type"] = "LORA";
  json["task_type"] = task_type.empty() ? nlohmann::json() : nlohmann::json(task_type);
  json["base_model_name_or_path"] =
      base_model_name_or_path ? nlohmann::json(*base_model_name_or_path) : nlohmann::json();
  json["r"] = r;
  if (std::floor(lora_alpha) == lora_alpha && std::fabs(lora_alpha) < 1e15)
    json["lora_alpha"] = static_cast<int64_t>(lora_alpha);  // PEFT writes an int
  else
    json["lora_alpha"] = lora_alpha;
  json["lora_dropout"] = lora_dropout;
  if (all_linear)
    json["target_modules"] = "all-linear";
  else if (target_regex)
    json["target_modules"] = *target_regex;
  else
    json["target_modules"] = target_modules;
  json["exclude_modules"] =
      exclude_modules.empty() ? nlohmann::json() : nlohmann::json(exclude_modules);
  json["modules_to_save"] =
      modules_to_save.empty() ? nlohmann::json() : nlohmann::json(modules_to_save);
  json["fan_in_fan_out"] = fan_in_fan_out;
  json["bias"] = "none";
  json["use_rslora"] = use_rslora;
  json["use_dora"] = false;
  if (init_lora_weights == "gaussian")
    json["init_lora_weights"] = "gaussian";
  else
    json["init_lora_weights"] = init_lora_weights == "true";
  json["inference_mode"] = true;
  json["layers_to_transform"] = nullptr;
  json["layers_pattern"] = nullptr;
  json["rank_pattern"] = nlohmann::json::object();
  json["alpha_pattern"] = nlohmann::json::object();
  return json;
}

std::vector<std::string> default_lora_target_modules(const std::string& model_type) {
  // PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING for ctrainer's families.
  static const std::map<std::string, std::vector<std::string>> defaults = {
      {"bert", {"query", "value"}},    {"gpt2", {"c_attn"}},
      {"llama", {"q_proj", "v_proj"}}, {"mistral", {"q_proj", "v_proj"}},
      {"qwen2", {"q_proj", "v_proj"}},
  };
  auto it = defaults.find(model_type);
  return it == defaults.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace ctrainer
