#pragma once
/// \file BertForMaskedLM: BertModel without its pooler + HF's MLM head (dense, activation,
/// LayerNorm, then the vocabulary projection tied to the word embeddings with its own bias).
/// Parameter names are HF's state-dict keys (bert.*, cls.predictions.transform.dense.weight, ...,
/// cls.predictions.bias), so transformers' checkpoints load and ours load in transformers.
#include <memory>
#include <optional>
#include <string>

#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/bert/bert_config.h>
#include <ctrainer/models/bert/bert_model.h>
#include <ctrainer/models/model.h>
#include <ctrainer/models/pretrained_weights.h>

namespace ctrainer {

/// HF BertPredictionHeadTransform: LayerNorm(act(dense(hidden))).
class BertPredictionHeadTransformImpl : public torch::nn::Module {
 public:
  explicit BertPredictionHeadTransformImpl(const BertConfig& config);
  at::Tensor forward(const at::Tensor& hidden);

  AdaptableLinear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // HF's attribute name, hence its state-dict key

 private:
  std::string activation_;
};
TORCH_MODULE(BertPredictionHeadTransform);

/// HF BertLMPredictionHead ("cls.predictions"): the transform, then the projection to the
/// vocabulary. Tied (tie_word_embeddings, HF's default): the word embeddings with the bias
/// "cls.predictions.bias" (HF ties decoder.weight and decoder.bias to them). Untied: "decoder",
/// a Linear with its own bias, and a frozen, unused "cls.predictions.bias" (HF's checkpoints
/// hold one).
class BertLMPredictionHeadImpl : public torch::nn::Module {
 public:
  BertLMPredictionHeadImpl(const BertConfig& config, bool tie_word_embeddings);
  /// Scores [.., vocab_size] of `hidden`; `word_embeddings` is the projection when tied.
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& word_embeddings);

  BertPredictionHeadTransform transform{nullptr};
  /// The untied projection; null when tied.
  AdaptableLinear decoder{nullptr};
  at::Tensor bias;
};
TORCH_MODULE(BertLMPredictionHead);

/// HF BertOnlyMLMHead ("cls"): holds "predictions".
class BertOnlyMLMHeadImpl : public torch::nn::Module {
 public:
  BertOnlyMLMHeadImpl(const BertConfig& config, bool tie_word_embeddings);
  BertLMPredictionHead predictions{nullptr};
};
TORCH_MODULE(BertOnlyMLMHead);

class BertForMaskedLM : public Model {
 public:
  /// `initialise_weights`: HF's initialisation from the global generator (seed it first); false
  /// leaves libtorch's defaults, for loading a checkpoint.
  explicit BertForMaskedLM(const BertConfig& config, bool initialise_weights = true);

  /// A model of `config` with the weights of `path` (a folder or .safetensors file): BERT
  /// checkpoints of any head load (a missing MLM head is initialised, a pooler is ignored as HF
  /// ignores it, an NSP head is reported as unexpected).
  static std::shared_ptr<BertForMaskedLM> from_pretrained(const BertConfig& config,
                                                          const std::string& path,
                                                          bool ignore_mismatched_sizes = false);

  /// Batch: "input_ids" [B, T]; optional "attention_mask", "token_type_ids" and "labels"
  /// [B, T] (-100 = not a target, as DataCollatorForLanguageModeling writes them). Logits
  /// [B, T, vocab_size]; the loss is the cross-entropy of the target tokens, their mean.
  ModelOutput forward(const Batch& batch) override;
  /// The loss's sum over target tokens divided by `num_items_in_batch` (the Trainer's
  /// token-level normalisation across an accumulation window and the ranks; transformers' BERT
  /// takes the count but still returns each micro-batch's mean).
  ModelOutput forward_with_num_items(const Batch& batch, int64_t num_items_in_batch) override;
  bool accepts_loss_kwargs() const override { return true; }

  std::optional<nlohmann::json> config() const override;
  bool supports_gradient_checkpointing() const override { return true; }
  void gradient_checkpointing_enable(bool enable = true) override {
    bert->set_gradient_checkpointing(enable);
  }
  void set_neftune_noise_alpha(std::optional<double> alpha) override {
    bert->embeddings->neftune_noise_alpha = alpha;
  }

  /// The checkpoint-matching rules above, for load_pretrained_weights().
  static WeightLoadOptions weight_load_options(bool tie_word_embeddings);

  BertModel bert{nullptr};
  BertOnlyMLMHead cls{nullptr};

 private:
  ModelOutput run(const Batch& batch, std::optional<int64_t> num_items_in_batch);

  BertConfig config_;
  bool tie_word_embeddings_ = true;
};

}  // namespace ctrainer
