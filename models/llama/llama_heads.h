#pragma once
/// \file Llama's task heads, as transformers names them: LlamaForCausalLM (an untied lm_head by
/// default; tie_word_embeddings makes it the token embedding itself) and
/// LlamaForSequenceClassification (a bias-free score on the last token that is not padding).
/// Parameter names are HF's state-dict keys ("model." + LlamaModel's, "lm_head.weight",
/// "score.weight").
#include <memory>
#include <optional>
#include <string>

#include <torch/nn/modules/linear.h>

#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/causal_lm.h>
#include <ctrainer/models/llama/llama_config.h>
#include <ctrainer/models/llama/llama_model.h>
#include <ctrainer/models/model.h>
#include <ctrainer/models/pretrained_weights.h>

namespace ctrainer {

/// What the Llama heads share: the decoder, config.json, gradient checkpointing and the
/// checkpoint-matching rules (base_model_prefix "model"; rotary_emb.inv_freq, which old
/// checkpoints saved, ignored).
class LlamaPreTrainedModel : public Model {
 public:
  std::optional<nlohmann::json> config() const override;
  const LlamaConfig& llama_config() const { return config_; }
  std::vector<std::string> no_split_modules() const override { return {"LlamaDecoderLayer"}; }
  bool supports_gradient_checkpointing() const override { return true; }
  void gradient_checkpointing_enable(bool enable = true) override {
    model->set_gradient_checkpointing(enable);
  }
  void set_neftune_noise_alpha(std::optional<double> alpha) override {
    model->neftune_noise_alpha = alpha;
  }
  static WeightLoadOptions weight_load_options(const std::string& architecture,
                                               const LlamaConfig& config);

  LlamaModel model{nullptr};

 protected:
  LlamaPreTrainedModel(const LlamaConfig& config, std::string architecture);
  LlamaConfig config_;
  std::string architecture_;
};

class LlamaForCausalLM : public LlamaPreTrainedModel, public CausalLanguageModel {
 public:
  /// `initialise_weights`: HF's initialisation from the global generator; false leaves libtorch's
  /// defaults, for loading a checkpoint.
  explicit LlamaForCausalLM(const LlamaConfig& config, bool initialise_weights = true);
  /// The weights of `path`; as transformers 5, a tied config whose checkpoint holds an
  /// lm_head.weight that differs from the embedding gets that head as its own parameter.
  static std::shared_ptr<LlamaForCausalLM> from_pretrained(const LlamaConfig& config,
                                                           const std::string& path,
                                                           bool ignore_mismatched_sizes = false);
  /// Batch: "input_ids" [B, T]; optional "attention_mask" and "labels" [B, T] (-100 = ignored).
  /// Logits [B, T, vocab_size]; the loss is transformers' ForCausalLMLoss (task_heads.h).
  ModelOutput forward(const Batch& batch) override;
  /// The loss's sum over label tokens divided by `num_items_in_batch` (the Trainer's token-level
  /// normalisation across an accumulation window and the ranks).
  ModelOutput forward_with_num_items(const Batch& batch, int64_t num_items_in_batch) override;
  bool accepts_loss_kwargs() const override { return true; }
  bool loss_shifts_labels() const override { return true; }

  at::Tensor next_token_logits(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                               const at::Tensor& position_ids, KeyValueCache& cache) override;
  int64_t num_decoder_layers() const override { return config_.num_hidden_layers; }
  std::optional<int64_t> max_position_embeddings() const override {
    return config_.max_position_embeddings;
  }

  /// The untied output projection; null when tied.
  AdaptableLinear lm_head{nullptr};
};

class LlamaForSequenceClassification : public LlamaPreTrainedModel {
 public:
  explicit LlamaForSequenceClassification(const LlamaConfig& config,
                                          bool initialise_weights = true);
  static std::shared_ptr<LlamaForSequenceClassification> from_pretrained(
      const LlamaConfig& config, const std::string& path, bool ignore_mismatched_sizes = false);
  /// As GPT2ForSequenceClassification: the score of each sequence's last token that is not
  /// config.pad_token_id; the loss by problem_type.
  ModelOutput forward(const Batch& batch) override;

  AdaptableLinear score{nullptr};
};

}  // namespace ctrainer
