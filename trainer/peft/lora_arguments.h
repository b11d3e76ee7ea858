#pragma once
/// \file The LoRA flags of the example programs (run_glue, run_clm, run_mlm): PEFT's LoraConfig
/// from --lora_r / --lora_alpha / --lora_dropout / --lora_target_modules or from a PEFT
/// adapter_config.json (--lora_config), attached to the model before the Trainer is built, and
/// --merge_lora's merged model folder after training.
#include <cstdint>
#include <optional>
#include <string>

#include <ctrainer/models/lora/lora_config.h>
#include <ctrainer/models/model.h>
#include <ctrainer/trainer/args/argument_parser.h>

namespace ctrainer {

/// The folder under output_dir that --merge_lora writes.
inline constexpr const char* kMergedModelFolder = "merged";

struct LoraArguments {
  /// The rank; setting it turns LoRA on (PEFT's r).
  std::optional<int64_t> lora_r;
  double lora_alpha = 8;
  double lora_dropout = 0.0;
  /// Comma-separated module names ("q_proj,v_proj"), "all-linear", or one regular expression
  /// the whole module path must match; empty: PEFT's default for the model type.
  std::string lora_target_modules;
  /// A PEFT adapter_config.json, or a folder holding one (and, if present,
  /// adapter_model.safetensors, whose weights are loaded to train on from them).
  std::string lora_config;
  /// After training, also write output_dir/merged: the base weights with the adapter merged in.
  bool merge_lora = false;

  void register_flags(ArgumentParser& parser);
  bool enabled() const { return lora_r.has_value() || !lora_config.empty(); }
  /// Throws ArgumentError naming the flag: LoRA flags without --lora_r or --lora_config, both
  /// ways at once, --merge_lora without LoRA or without --do_train (`do_train`), values out of
  /// range.
  void validate(bool do_train) const;
  /// The LoraConfig the flags (or the file) describe, for PEFT task type `task_type`
  /// ("SEQ_CLS", "CAUSAL_LM", or empty) and base model folder `base_model` (may be empty).
  LoraConfig config(const std::string& task_type, const std::string& base_model) const;
  /// When enabled(): attaches the adapters (attach_lora) and loads --lora_config's
  /// adapter_model.safetensors when the folder has one. Call after the model is loaded and
  /// before the Trainer is built.
  void attach(Model& model, const std::string& task_type, const std::string& base_model) const;
  /// With --merge_lora, on the main process: output_dir/merged from the adapter the run saved
  /// in output_dir (save_merged_lora_model). Call after Trainer::save_model(output_dir).
  /// Returns the folder written (the caller adds the tokenizer), or nothing.
  std::optional<std::string> save_merged(const Model& model, const std::string& output_dir,
                                         bool main_process) const;
};

}  // namespace ctrainer
