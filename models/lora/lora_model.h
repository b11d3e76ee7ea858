#pragma once
/// \file LoRA on a whole model, as PEFT does it: get_peft_model (attach_lora), the adapter's
/// files (adapter_model.safetensors + adapter_config.json, PEFT's keys), PeftModel.from_pretrained
/// (load_lora_adapter) and merge_and_unload (merge_lora).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <ctrainer/integrations/safetensors_index.h>
#include <ctrainer/models/lora/lora_config.h>
#include <ctrainer/models/model.h>
#include <ctrainer/models/state_dict.h>

namespace ctrainer {

/// The adapter file's name in a PEFT adapter folder.
inline constexpr const char* kLoraAdapterWeightsFile = "adapter_model.safetensors";
/// The adapter config's name in a PEFT adapter folder.
inline constexpr const char* kLoraAdapterConfigFile = "adapter_config.json";
/// PEFT's prefix of every key in adapter_model.safetensors (PeftModel.base_model.model).
inline constexpr const char* kLoraKeyPrefix = "base_model.model.";

/// What attach_lora() did.
struct LoraAttachment {
  /// Module paths that got an adapter, in module order.
  std::vector<std::string> adapted_modules;
  /// Module paths trained in full and saved with the adapter (modules_to_save).
  std::vector<std::string> saved_modules;
  int64_t trainable_parameters = 0;
  int64_t all_parameters = 0;
};

/// PEFT's get_peft_model with a LoraConfig: attaches an adapter to every targeted projection
/// (see LoraConfig::target_modules; the model's config.json model_type gives the default
/// targets), freezes every other parameter except those of modules_to_save (SEQ_CLS adds
/// "classifier" and "score", as PEFT does), and logs PEFT's "trainable params" line. The config
/// the model keeps (attached_lora_config) has "all-linear" resolved to the module paths, as
/// PEFT saves it. Throws ArgumentError when nothing matches, when a matched module is not a
/// Linear (or GPT-2 Conv1D), or when the model has adapters already.
LoraAttachment attach_lora(Model& model, LoraConfig config);

/// The config of the adapters attach_lora() attached; nullptr when the model has none.
std::shared_ptr<const LoraConfig> attached_lora_config(const torch::nn::Module& model);

/// PEFT's get_peft_model_state_dict: the adapters' A and B and the modules_to_save tensors,
/// keyed as in adapter_model.safetensors ("base_model.model.<module>.lora_A.weight", ...), in
/// the model's state-dict order.
std::vector<std::pair<std::string, at::Tensor>> lora_adapter_state_dict(
    const torch::nn::Module& model);

/// PeftModel.save_pretrained: writes `dir`/adapter_model.safetensors (format "pt") and
/// adapter_config.json. Throws std::logic_error when the model has no adapters.
void save_lora_adapter(const torch::nn::Module& model, const std::string& dir);

/// Loads adapter_model.safetensors (`path` is the file or its folder) into a model with adapters
/// attached, by PEFT's keys. Every adapter tensor must be in the file and every key of the file
/// must be one (shapes equal); otherwise ArgumentError lists the keys and nothing is copied.
void load_lora_adapter(torch::nn::Module& model, const std::string& path);

/// PEFT's merge_and_unload: adds each adapter's scaling * B A into its projection's weight and
/// removes the adapters; the model is then a plain model (save_pretrained writes
/// model.safetensors that transformers loads). Throws std::logic_error when there are none.
void merge_lora(torch::nn::Module& model);

/// PEFT's merge_and_unload().save_pretrained(out_dir) without touching the model: the base
/// weights held in memory (frozen, so whole on every rank whatever the strategy) with the
/// adapter written to `adapter_dir` (the run's saved, gathered adapter) merged in and its
/// modules_to_save taken from it, written to `out_dir` as model.safetensors (sharded past
/// `max_shard_bytes`) + config.json, a folder transformers loads. Throws std::logic_error when
/// the model has no adapters, ArgumentError when the adapter file does not fit them.
void save_merged_lora_model(const Model& model, const std::string& adapter_dir,
                            const std::string& out_dir,
                            std::int64_t max_shard_bytes = kDefaultMaxShardBytes);

}  // namespace ctrainer
