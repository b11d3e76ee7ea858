#pragma once
/// \file BertForSequenceClassification: BertModel + dropout + a linear head on the pooled [CLS]
/// output, with HF's three losses (regression: MSE, single_label_classification: cross-entropy,
/// multi_label_classification: BCE with logits). Parameter names are HF's state-dict keys
/// (bert.embeddings.word_embeddings.weight, ..., bert.pooler.dense.weight, classifier.weight), so
/// a transformers model.safetensors loads without renaming and ours loads in transformers.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/nn/modules/linear.h>

#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/bert/bert_config.h>
#include <ctrainer/models/bert/bert_model.h>
#include <ctrainer/models/dropout.h>
#include <ctrainer/models/model.h>
#include <ctrainer/models/pretrained_weights.h>

namespace ctrainer {

/// Overrides applied to the config.json of from_pretrained() (HF from_pretrained kwargs).
struct BertFromPretrainedOptions {
  /// New number of labels (HF num_labels=...): id2label becomes LABEL_0.. when it changes.
  std::optional<int64_t> num_labels;
  /// Label names by id; sets num_labels and label2id too (run_glue's label_to_id).
  std::optional<std::vector<std::string>> id2label;
  std::optional<std::string> problem_type;
  /// Re-initialise weights whose shape differs from the checkpoint (a head with another number
  /// of labels) instead of failing; they are reported as a warning.
  bool ignore_mismatched_sizes = false;
};

class BertForSequenceClassification : public Model {
 public:
  /// A model with HF's random initialisation (global generator: seed it first);
  /// `initialise_weights` false leaves libtorch's module defaults (with_pretrained_weights).
  explicit BertForSequenceClassification(const BertConfig& config, bool initialise_weights = true);

  /// Loads `dir`/config.json and `dir`/model.safetensors. Accepts the checkpoints HF accepts:
  /// BertForSequenceClassification ones, BertForPreTraining ones (cls.* keys are unexpected:
  /// ignored with a warning) and bare BertModel ones (no "bert." prefix); a missing classifier
  /// is initialised and reported with HF's warning; old checkpoints' embeddings.position_ids are
  /// ignored. A shape mismatch throws ArgumentError naming the key and both shapes.
  static std::shared_ptr<BertForSequenceClassification> from_pretrained(
      const std::string& dir, const BertFromPretrainedOptions& options = {});

  /// A model of `config` with the weights of `path` (a folder or .safetensors file; `load` as
  /// weight_load_options() plus the caller's choices), initialised as transformers 5 does: what
  /// the checkpoint holds is never drawn for, so the default CPU generator is left where it was
  /// before, then drawn for the parameters the checkpoint lacks only (a new classifier gets the
  /// first draws after set_seed, as HF's).
  static std::shared_ptr<BertForSequenceClassification> with_pretrained_weights(
      const BertConfig& config, const std::string& path, const WeightLoadOptions& load);

  /// Writes `dir`/config.json (architectures = ["BertForSequenceClassification"]) and
  /// `dir`/model.safetensors, readable by transformers' from_pretrained.
  void save_pretrained(const std::string& dir) const;

  /// Batch: "input_ids" [B, T] int64; optional "attention_mask" [B, T] (1 = token),
  /// "token_type_ids" [B, T] (default zeros) and "labels": int64 [B] (single-label), float [B]
  /// (regression, num_labels 1) or float [B, num_labels] (multi-label). Without a configured
  /// problem_type, the first batch with labels sets it as HF does: num_labels == 1 ->
  /// regression; integer labels -> single_label_classification; otherwise multi-label.
  ModelOutput forward(const Batch& batch) override;

  /// The pooled [CLS] representation of the last forward pass is not kept; this runs the
  /// encoder and pooler only (for tests and feature extraction).
  at::Tensor pooled_output(const Batch& batch);

  /// By default the last encoder layer computes the [CLS] row alone, the only one the
  /// classifier reads (same values and gradients as transformers, ~1/num_hidden_layers less
  /// encoder work). `true` computes every row as transformers does: the same FLOPs, for
  /// comparisons that must not credit the shortcut to the trainer (run_glue --full_last_layer).
  void set_full_last_layer(bool full) { full_last_layer_ = full; }
  bool full_last_layer() const { return full_last_layer_; }

  /// config.json contents: BertConfig::to_json() with architectures = [this class].
  std::optional<nlohmann::json> config() const override;
  const BertConfig& bert_config() const { return config_; }

  bool supports_gradient_checkpointing() const override { return true; }
  void gradient_checkpointing_enable(bool enable = true) override;
  void set_neftune_noise_alpha(std::optional<double> alpha) override {
    bert->embeddings->neftune_noise_alpha = alpha;
  }

  /// The checkpoint-matching rules above, for load_pretrained_weights().
  static WeightLoadOptions weight_load_options();

  BertModel bert{nullptr};
  Dropout dropout{nullptr};  // ctrainer::Dropout: torch's distribution, a cheaper CPU mask
  AdaptableLinear classifier{nullptr};

 private:
  at::Tensor compute_loss(const at::Tensor& logits, const at::Tensor& labels);

  BertConfig config_;
  bool full_last_layer_ = false;
};

}  // namespace ctrainer
