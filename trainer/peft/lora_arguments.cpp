#include <ctrainer/trainer/peft/lora_arguments.h>

#include <filesystem>
#include <sstream>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/lora/lora_model.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer {
namespace {

namespace fs = std::filesystem;

// A value with a regular-expression character is one pattern (PEFT's target_modules string).
bool is_pattern(const std::string& value) {
  return value.find_first_of("*+?[](){}|^$\\") != std::string::npos;
}

std::vector<std::string> split_names(const std::string& value) {
  std::vector<std::string> names;
  std::stringstream stream(value);
  std::string name;
  while (std::getline(stream, name, ',')) {
    const auto first = name.find_first_not_of(' ');
    const auto last = name.find_last_not_of(' ');
    if (first == std::string::npos)
      throw ArgumentError("--lora_target_modules \"" + value +
                          "\" has an empty name; give comma-separated module names");
    names.push_back(name.substr(first, last - first + 1));
  }
  return names;
}

}  // namespace

void LoraArguments::register_flags(ArgumentParser& parser) {
  parser.add_option("lora_r", &lora_r,
                    "Train a LoRA adapter of this rank instead of the whole model (PEFT's r): "
                    "only the adapter (and modules_to_save) trains, and output_dir gets "
                    "adapter_model.safetensors + adapter_config.json as PEFT saves them.");
  parser.add_option("lora_alpha", &lora_alpha,
                    "LoRA scaling numerator: the update B A is scaled by lora_alpha / r.");
  parser.add_option("lora_dropout", &lora_dropout, "Dropout probability on the LoRA path's input.");
  parser.add_option("lora_target_modules", &lora_target_modules,
                    "Modules to adapt: comma-separated names matched as PEFT matches them (a "
                    "module whose path ends with .name), \"all-linear\", or one regular "
                    "expression the whole module path must match. Default: PEFT's for the model "
                    "type (bert: query,value; gpt2: c_attn; llama: q_proj,v_proj).");
  parser.add_option("lora_config", &lora_config,
                    "A PEFT adapter_config.json (or a folder holding one, and optionally "
                    "adapter_model.safetensors to continue training from) that says the LoRA "
                    "settings instead of the --lora_* flags.");
  parser.add_option("merge_lora", &merge_lora,
                    "After training, also write output_dir/merged: the model with the adapter "
                    "merged into its weights (PEFT's merge_and_unload), a folder transformers "
                    "loads.");
}

void LoraArguments::validate(bool do_train) const {
  const bool flags_given = lora_alpha != 8 || lora_dropout != 0.0 || !lora_target_modules.empty();
  if (!lora_config.empty() && (lora_r || flags_given))
    throw ArgumentError("--lora_config " + lora_config +
                        " says the LoRA settings: drop --lora_r / --lora_alpha / --lora_dropout / "
                        "--lora_target_modules, or drop --lora_config");
  if (!enabled() && flags_given)
    throw ArgumentError(
        "--lora_alpha, --lora_dropout and --lora_target_modules need --lora_r (the rank) to "
        "train a LoRA adapter");
  if (merge_lora && !enabled())
    throw ArgumentError("--merge_lora needs a LoRA adapter: give --lora_r or --lora_config");
  if (merge_lora && !do_train)
    throw ArgumentError("--merge_lora merges the adapter a run trains: it needs --do_train");
  if (lora_r) config("", "").validate("--lora_r/--lora_alpha/--lora_dropout");
}

LoraConfig LoraArguments::config(const std::string& task_type,
                                 const std::string& base_model) const {
  LoraConfig out;
  if (!lora_config.empty()) {
    out = LoraConfig::from_file(lora_config);
  } else {
    out.r = *lora_r;
    out.lora_alpha = lora_alpha;
    out.lora_dropout = lora_dropout;
    if (lora_target_modules == "all-linear")
      out.all_linear = true;
    else if (is_pattern(lora_target_modules))
      out.target_regex = lora_target_modules;
    else if (!lora_target_modules.empty())
      out.target_modules = split_names(lora_target_modules);
    out.task_type = task_type;
  }
  if (!base_model.empty()) out.base_model_name_or_path = base_model;
  return out;
}

void LoraArguments::attach(Model& model, const std::string& task_type,
                           const std::string& base_model) const {
  if (!enabled()) return;
  attach_lora(model, config(task_type, base_model));
  if (!lora_config.empty() && fs::is_directory(lora_config) &&
      fs::exists(fs::path(lora_config) / kLoraAdapterWeightsFile)) {
    load_lora_adapter(model, lora_config);
    logging::logger()->info("LoRA adapter weights loaded from {}", lora_config);
  }
}

std::optional<std::string> LoraArguments::save_merged(const Model& model,
                                                      const std::string& output_dir,
                                                      bool main_process) const {
  if (!merge_lora || !main_process) return std::nullopt;
  const std::string dir = (fs::path(output_dir) / kMergedModelFolder).string();
  save_merged_lora_model(model, output_dir, dir);
  logging::logger()->info("Merged LoRA model written to {}", dir);
  return dir;
}

}  // namespace ctrainer
