#pragma once
/// \file PEFT's LoraConfig as adapter_config.json holds it: what ctrainer honours, read and
/// written in PEFT's format so that peft.PeftModel.from_pretrained loads our adapters and we load
/// PEFT's.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer {

/// The settings of a LoRA adapter (PEFT's LoraConfig; defaults are PEFT 0.21's).
struct LoraConfig {
  /// Rank of the update B A.
  int64_t r = 8;
  /// The update is scaled by lora_alpha / r (lora_alpha / sqrt(r) with use_rslora).
  double lora_alpha = 8;
  /// Dropout on the adapter's input (the base layer sees the input as it is).
  double lora_dropout = 0.0;
  /// Modules to adapt, matched as PEFT matches a list: a module whose path equals an entry or
  /// ends with "." + entry. Empty with no target_regex and not all_linear: the model type's
  /// PEFT default (bert: query, value; gpt2: c_attn; llama: q_proj, v_proj).
  std::vector<std::string> target_modules;
  /// PEFT's target_modules given as one string: a regular expression the whole path must match.
  std::optional<std::string> target_regex;
  /// PEFT's "all-linear": every Linear (and GPT-2 Conv1D) except the output layer (lm_head,
  /// cls.predictions.decoder) and, for SEQ_CLS, the classifier head.
  bool all_linear = false;
  /// Modules never adapted, matched as target_modules.
  std::vector<std::string> exclude_modules;
  /// Modules trained in full and saved with the adapter (SEQ_CLS adds classifier and score).
  std::vector<std::string> modules_to_save;
  /// Scale by lora_alpha / sqrt(r) (rank-stabilised LoRA).
  bool use_rslora = false;
  /// How A and B start: "true" (A Kaiming-uniform, B zero: the model is unchanged), "gaussian"
  /// (A normal with std 1/r, B zero) or "false" (both as a new Linear: the model changes).
  std::string init_lora_weights = "true";
  /// PEFT's task_type ("SEQ_CLS", "CAUSAL_LM", ...; empty: none), kept for the file and for
  /// SEQ_CLS's defaults.
  std::string task_type;
  /// The base model's folder, written to the file for PEFT's AutoPeftModel.
  std::optional<std::string> base_model_name_or_path;
  /// Written as PEFT writes it: true when the adapted layers store their weight [in, out]
  /// (GPT-2's Conv1D). ctrainer reads each layer's own layout; the value read is ignored.
  bool fan_in_fan_out = false;

  /// lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora.
  double scaling() const;

  /// Checks the values; throws ArgumentError naming `source` (a flag set or file) and the key.
  void validate(const std::string& source) const;

  /// Reads an adapter_config.json object. Keys of PEFT features ctrainer does not implement are
  /// accepted only with the value that turns them off (null, false, {}, []), and refused naming
  /// the key otherwise, as are a peft_type other than LORA and values of the wrong type.
  static LoraConfig from_json(const nlohmann::json& json, const std::string& source);
  /// Reads `path`: an adapter_config.json, or a folder holding one.
  static LoraConfig from_file(const std::string& path);

  /// adapter_config.json as PEFT writes it (target_modules as the list or the regex).
  nlohmann::json to_json() const;
};

/// PEFT's default target modules of a transformers model_type (empty when PEFT has none).
std::vector<std::string> default_lora_target_modules(const std::string& model_type);

}  // namespace ctrainer
