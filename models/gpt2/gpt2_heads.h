#pragma once
/// \file GPT-2's task heads, as transformers names them: GPT2LMHeadModel (causal language
/// modelling, the head tied to the token embeddings unless tie_word_embeddings is false) and
/// GPT2ForSequenceClassification (a bias-free score on the last token that is not padding).
/// Parameter names are HF's state-dict keys ("transformer." + GPT2Model's, "lm_head.weight",
/// "score.weight"), so transformers' checkpoints load and ours load in transformers.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/nn/modules/linear.h>

#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/causal_lm.h>
#include <ctrainer/models/gpt2/gpt2_config.h>
#include <ctrainer/models/gpt2/gpt2_model.h>
#include <ctrainer/models/model.h>
#include <ctrainer/models/pretrained_weights.h>

namespace ctrainer {

/// What the GPT-2 heads share: the transformer, config.json, gradient checkpointing and the
/// checkpoint-matching rules (base_model_prefix "transformer"; old checkpoints' attn.bias
/// buffers ignored).
class GPT2PreTrainedModel : public Model {
 public:
  std::optional<nlohmann::json> config() const override;
  const GPT2Config& gpt2_config() const { return config_; }
  std::vector<std::string> no_split_modules() const override { return {"GPT2Block"}; }
  bool supports_gradient_checkpointing() const override { return true; }
  void gradient_checkpointing_enable(bool enable = true) override {
    transformer->set_gradient_checkpointing(enable);
  }
  void set_neftune_noise_alpha(std::optional<double> alpha) override {
    transformer->neftune_noise_alpha = alpha;
  }
  /// The rules above, for load_pretrained_weights(); `architecture` names the class.
  static WeightLoadOptions weight_load_options(const std::string& architecture,
                                               const GPT2Config& config);

  GPT2Model transformer{nullptr};

 protected:
  GPT2PreTrainedModel(const GPT2Config& config, std::string architecture);
  GPT2Config config_;
  std::string architecture_;
};

class GPT2LMHeadModel : public GPT2PreTrainedModel, public CausalLanguageModel {
 public:
  /// `initialise_weights`: HF's initialisation from the global generator (seed it first); false
  /// leaves libtorch's defaults, for loading a checkpoint.
  explicit GPT2LMHeadModel(const GPT2Config& config, bool initialise_weights = true);

  /// A model of `config` with the weights of `path` (a folder or .safetensors file); what the
  /// checkpoint lacks is initialised (as transformers 5: nothing is drawn for what it holds). As
  /// transformers 5, a tied config whose checkpoint holds an lm_head.weight that differs from
  /// the embedding gets that head as its own parameter.
  static std::shared_ptr<GPT2LMHeadModel> from_pretrained(const GPT2Config& config,
                                                          const std::string& path,
                                                          bool ignore_mismatched_sizes = false);

  /// Batch: "input_ids" [B, T]; optional "attention_mask" [B, T], "token_type_ids" and "labels"
  /// [B, T] (-100 = ignored). Logits [B, T, vocab_size]; the loss is transformers'
  /// ForCausalLMLoss: labels shifted left inside the model, cross-entropy in fp32, the mean over
  /// the tokens that are not ignored.
  ModelOutput forward(const Batch& batch) override;
  /// The loss's sum over label tokens divided by `num_items_in_batch` (the Trainer's token-level
  /// normalisation across an accumulation window and the ranks).
  ModelOutput forward_with_num_items(const Batch& batch, int64_t num_items_in_batch) override;
  bool accepts_loss_kwargs() const override { return true; }
  bool loss_shifts_labels() const override { return true; }

  at::Tensor next_token_logits(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                               const at::Tensor& position_ids, KeyValueCache& cache) override;
  int64_t num_decoder_layers() const override { return config_.n_layer; }
  std::optional<int64_t> max_position_embeddings() const override { return config_.n_positions; }

  /// The untied output projection; null when tied (the logits use transformer->wte's weight, one
  /// parameter, which HF's save_pretrained also writes once).
  AdaptableLinear lm_head{nullptr};
};

class GPT2ForSequenceClassification : public GPT2PreTrainedModel {
 public:
  explicit GPT2ForSequenceClassification(const GPT2Config& config, bool initialise_weights = true);

  static std::shared_ptr<GPT2ForSequenceClassification> from_pretrained(
      const GPT2Config& config, const std::string& path, bool ignore_mismatched_sizes = false);

  /// Batch as BertForSequenceClassification's (labels [B] or [B, num_labels]). The logits are
  /// the score of each sequence's last token that is not config.pad_token_id (HF: the rightmost
  /// such token, so left and right padding both work); without a pad_token_id only batches of
  /// one sequence are accepted (ArgumentError), as in transformers.
  ModelOutput forward(const Batch& batch) override;

  AdaptableLinear score{nullptr};
};

}  // namespace ctrainer
