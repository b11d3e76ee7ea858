#pragma once
/// \file Hugging Face style weight loading and saving: a model.safetensors whose keys are the
/// module's state-dict names (named_parameters + named_buffers) is copied into the module, with
/// HF's handling of the base-model prefix, legacy key names, missing keys (left as initialised,
/// reported), unexpected keys (ignored, reported) and shape mismatches (an error naming the key
/// and both shapes). save_pretrained writes config.json + model.safetensors as HF does.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <ctrainer/integrations/safetensors_index.h>
#include <ctrainer/models/model.h>
#include <ctrainer/models/state_dict.h>

namespace ctrainer {

/// How to match checkpoint keys to a module (HF PreTrainedModel class attributes).
struct WeightLoadOptions {
  /// Class name used in messages ("BertForSequenceClassification").
  std::string model_class = "model";
  /// HF base_model_prefix ("bert"): a checkpoint of the bare base model (keys without
  /// "bert.") loads into a head model, and a head model's checkpoint into the bare base model.
  std::string base_model_prefix;
  /// Regular expressions (std::regex_search) of checkpoint keys that are dropped silently
  /// (HF _keys_to_ignore_on_load_unexpected, e.g. old checkpoints' "embeddings.position_ids").
  std::vector<std::string> ignore_unexpected;
  /// HF ignore_mismatched_sizes: leave weights whose shape differs initialised and report them,
  /// instead of failing.
  bool ignore_mismatched_sizes = false;
  /// torch's strict load_state_dict: a missing or unexpected key is an error (ArgumentError
  /// listing them) and nothing is copied. Resuming a checkpoint of the same model uses it.
  bool strict = false;
};

/// A checkpoint tensor whose shape differs from the model's.
struct MismatchedKey {
  std::string key;
  std::vector<int64_t> checkpoint_shape;
  std::vector<int64_t> model_shape;
};

/// What loading did, in the model's key names (sorted).
struct WeightLoadReport {
  std::vector<std::string> missing_keys;       ///< not in the checkpoint: kept as initialised
  std::vector<std::string> unexpected_keys;    ///< in the checkpoint only: ignored
  std::vector<MismatchedKey> mismatched_keys;  ///< only with ignore_mismatched_sizes
};

/// Copies `checkpoint` into the module's parameters and buffers (converting dtype and device).
/// Shape mismatches throw ArgumentError listing every mismatched key with both shapes (HF's
/// "size mismatch for K: copying a param with shape [..] from checkpoint, the shape in current
/// model is [..]") unless options.ignore_mismatched_sizes; nothing is copied in that case.
/// `source` names the checkpoint in messages.
WeightLoadReport load_state_dict(torch::nn::Module& module,
                                 const std::map<std::string, at::Tensor>& checkpoint,
                                 const WeightLoadOptions& options, const std::string& source);

/// HF's log messages for a report: "Some weights of <class> were not initialized from the model
/// checkpoint at <source> and are newly initialized: [...]", "Some weights of the model
/// checkpoint at <source> were not used when initializing <class>: [...]", and the mismatched
/// sizes. Empty when everything matched.
std::vector<std::string> weight_load_warnings(const WeightLoadReport& report,
                                              const WeightLoadOptions& options,
                                              const std::string& source);

/// Reads `path` (a .safetensors file, a model.safetensors.index.json with its shards, or a folder
/// holding model.safetensors or else a sharded checkpoint's index), loads it with
/// load_state_dict() and logs weight_load_warnings() as warnings on the ctrainer logger. A PEFT
/// adapter folder (adapter_model.safetensors only) loads with load_lora_adapter() into a model
/// with LoRA adapters attached (an empty report), and is an ArgumentError for one without. A folder
/// with only pytorch_model.bin / tf_model.h5 gets an ArgumentError saying to convert it.
WeightLoadReport load_pretrained_weights(torch::nn::Module& module, const std::string& path,
                                         const WeightLoadOptions& options);

/// A model built and loaded by build_and_load_pretrained().
struct PretrainedLoad {
  std::shared_ptr<Model> model;
  /// The keys the checkpoint did not provide (missing, and mismatched under
  /// ignore_mismatched_sizes): the caller initialises these, as transformers does.
  std::vector<std::string> fresh_keys;
};

/// transformers 5's from_pretrained, which builds on the meta device and draws nothing for what
/// it loads: builds the model with `build` (without HF's initialisation; libtorch's modules still
/// draw their defaults), loads `path` with load_pretrained_weights(), then rewinds the default
/// CPU generator to where it was before building. The caller then initialises fresh_keys, whose
/// draws are the first after the rewind (a new classifier gets the first draws after set_seed,
/// as HF's).
PretrainedLoad build_and_load_pretrained(const std::function<std::shared_ptr<Model>()>& build,
                                         const std::string& path, const WeightLoadOptions& load);

/// build_and_load_pretrained() for a head class: `Head(config, /*initialise_weights=*/false)`
/// loaded from `path`, then `init_missing(model, config, &fresh_keys)` (the family's HF
/// initialisation of what the checkpoint lacked).
template <typename Head, typename Config, typename InitMissing>
std::shared_ptr<Head> load_pretrained_head(const Config& config, const std::string& path,
                                           const WeightLoadOptions& load,
                                           InitMissing init_missing) {
  PretrainedLoad loaded = build_and_load_pretrained(
      [&] { return std::make_shared<Head>(config, /*initialise_weights=*/false); }, path, load);
  init_missing(*loaded.model, config, &loaded.fresh_keys);
  return std::static_pointer_cast<Head>(loaded.model);
}

/// Whether the checkpoint at `path` (a folder, a .safetensors file or a sharded checkpoint's
/// index) names `key`, read from the safetensors header or the index's weight_map alone (no
/// tensor is read); false when it cannot tell (loading then reports what is wrong). Models whose
/// head transformers 5 ties only when the checkpoint holds no different lm_head.weight use it.
bool checkpoint_names_key(const std::string& path, const std::string& key);

/// HF save_pretrained: creates `dir` and writes model.safetensors (the state dict, metadata
/// format "pt"), or, past `max_shard_bytes`, shards and model.safetensors.index.json as
/// transformers splits them (save_safetensors_shards), and, when the model has one, config.json
/// (with "architectures" set to `architecture` when that is not empty). A model with LoRA
/// adapters attached is saved as PEFT saves it: save_lora_adapter() (the adapter files only).
void save_pretrained(const Model& model, const std::string& dir,
                     const std::string& architecture = "",
                     std::int64_t max_shard_bytes = kDefaultMaxShardBytes);

}  // namespace ctrainer
