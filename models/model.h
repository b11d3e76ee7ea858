#pragma once
/// \file The Model interface the Trainer trains: a torch::nn::Module whose forward takes a
/// Batch of named tensors and returns logits and (when labels are present) a loss.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/batch.h>
#include <ctrainer/core/errors.h>

namespace ctrainer {

/// What a model returns (HF's ModelOutput). `loss` is defined iff the batch carried labels;
/// `logits` is the head's main output. Task heads with more outputs put them in `tensors` under
/// HF's names ("start_logits", "end_logits", "encoder_last_hidden_state", "hidden_states", ...);
/// decoders return their attention cache in `past_key_values`.
struct ModelOutput {
  at::Tensor loss;
  at::Tensor logits;
  /// Further named outputs, keyed by HF's ModelOutput field names.
  std::map<std::string, at::Tensor> tensors;
  /// One (key, value) pair per decoder layer, each [batch, heads, positions, head_dim]
  /// (HF's legacy past_key_values layout); empty for models without a cache.
  std::vector<std::pair<at::Tensor, at::Tensor>> past_key_values;

  /// Whether output `name` is defined: "loss", "logits" or a key of `tensors`.
  bool contains(const std::string& name) const;
  /// Output `name` ("loss", "logits" or a key of `tensors`); throws std::out_of_range naming
  /// the outputs this one has when it is not defined.
  const at::Tensor& at(const std::string& name) const;
  /// Names of the defined outputs in HF's order: loss, logits, then `tensors` by name.
  std::vector<std::string> names() const;
};

/// Base class of every model trained by ctrainer. Subclasses register their parameters and
/// sub-modules as usual (register_parameter / register_module) so that named_parameters() gives
/// stable, hierarchical names ("encoder.layers.0.linear1.weight").
class Model : public torch::nn::Module {
 public:
  using torch::nn::Module::Module;
  ~Model() override = default;

  /// Runs the model on a batch already on the model's device.
  virtual ModelOutput forward(const Batch& batch) = 0;

  /// Whether the loss is a sum over label tokens that forward_with_num_items() divides by a
  /// count it is given (HF's accepts_loss_kwargs with a num_items_in_batch-aware loss, e.g.
  /// causal LMs): the Trainer then passes the label tokens of the whole accumulation window
  /// (and, with average_tokens_across_devices, of every rank) instead of weighting each
  /// micro-batch's mean by its share of the window's examples.
  virtual bool accepts_loss_kwargs() const { return false; }

  /// Whether the loss predicts label t+1 at position t (causal LMs), so that position 0 of
  /// each row is never a target and the Trainer counts labels[..., 1:] (as transformers 5.24).
  virtual bool loss_shifts_labels() const { return false; }

  /// forward() whose loss is the sum over this batch's label tokens divided by
  /// `num_items_in_batch` (HF's num_items_in_batch loss kwarg). Models that do not
  /// accepts_loss_kwargs() ignore the count.
  virtual ModelOutput forward_with_num_items(const Batch& batch, int64_t num_items_in_batch) {
    (void)num_items_in_batch;
    return forward(batch);
  }

  /// Floating-point operations of a forward+backward pass on `batch`, for state.total_flos.
  /// HF's estimate: 6 x tokens ("input_ids" elements) x non-embedding parameters; 0 when the
  /// batch has no "input_ids". Override for other model kinds.
  virtual double floating_point_ops(const Batch& batch) const;

  /// The model's configuration, saved as config.json next to its weights in checkpoints
  /// (HF's config.json). Models without one return nothing.
  virtual std::optional<nlohmann::json> config() const { return std::nullopt; }

  /// Number of parameters, optionally without those of embedding layers.
  int64_t num_parameters(bool exclude_embeddings = false) const;

  /// Class names of the repeated blocks that must stay whole (HF's _no_split_modules, e.g.
  /// {"LlamaDecoderLayer"}): ZeRO-3 and FSDP full_shard make one unit of each module of these
  /// classes when the configuration names none. The classes must declare a ForwardHookPoint.
  virtual std::vector<std::string> no_split_modules() const { return {}; }

  /// NEFTune (--neftune_noise_alpha): while training, uniform noise of magnitude
  /// alpha / sqrt(T * hidden) on the output of the input embeddings, as transformers' hook adds
  /// it (unset: none). Models without input embeddings throw ArgumentError when given one.
  virtual void set_neftune_noise_alpha(std::optional<double> alpha) {
    if (alpha)
      throw ArgumentError(
          "--neftune_noise_alpha: this model has no input embeddings to add "
          "NEFTune noise to");
  }

  /// Whether gradient_checkpointing_enable() works (HF supports_gradient_checkpointing).
  virtual bool supports_gradient_checkpointing() const { return false; }

  /// Recompute activations during backward instead of storing them (--gradient_checkpointing;
  /// HF PreTrainedModel.gradient_checkpointing_enable / _disable). It applies in training mode
  /// only. Models without support throw ArgumentError when asked to enable it.
  virtual void gradient_checkpointing_enable(bool enable = true) {
    if (enable)
      throw ArgumentError(
          "--gradient_checkpointing: this model does not support gradient checkpointing");
  }

 private:
  mutable std::optional<int64_t> non_embedding_parameters_;
};

}  // namespace ctrainer
