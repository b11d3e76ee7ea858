#pragma once
/// \file T5ForConditionalGeneration, as transformers names it: the shared token embedding, the
/// encoder and decoder stacks (t5_model.h) and the language-modelling head. Parameter names are
/// HF's state-dict keys (shared.weight, encoder.block..., decoder.block..., lm_head.weight when
/// the head is not shared.weight).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/nn/modules/embedding.h>

#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/model.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/seq2seq_lm.h>
#include <ctrainer/models/t5/t5_config.h>
#include <ctrainer/models/t5/t5_model.h>

namespace ctrainer {

class T5ForConditionalGeneration : public Model, public Seq2SeqLanguageModel {
 public:
  /// A model of `config`; the head is shared.weight unless config.tie_word_embeddings is false.
  /// `initialise_weights`: HF's initialisation from the global generator; false leaves
  /// libtorch's defaults, for loading a checkpoint.
  explicit T5ForConditionalGeneration(const T5Config& config, bool initialise_weights = true);

  /// A new model as transformers 5 makes one from a config: the head always tied.
  static std::shared_ptr<T5ForConditionalGeneration> from_config(const T5Config& config);
  /// The weights of `path` (a folder or .safetensors file). As transformers 5: the head is its
  /// own parameter only when the checkpoint holds an lm_head.weight that differs from
  /// shared.weight (T5 v1.1 and FLAN-T5 checkpoints); otherwise it is shared.weight. The copies
  /// of shared.weight that older checkpoints hold (encoder/decoder.embed_tokens.weight) are
  /// ignored.
  static std::shared_ptr<T5ForConditionalGeneration> from_pretrained(
      const T5Config& config, const std::string& path, bool ignore_mismatched_sizes = false);

  /// Batch: "input_ids" [B, S]; optional "attention_mask" [B, S], "decoder_input_ids" [B, T]
  /// (else made from "labels" as T5's _shift_right: decoder_start_token_id first, -100 as
  /// pad_token_id), "decoder_attention_mask" [B, T], "labels" [B, T] (-100 = ignored). Logits
  /// [B, T, vocab_size] (the decoder output scaled by d_model^-0.5 first when
  /// scale_decoder_outputs); loss: the mean cross-entropy over labels that are not -100.
  /// tensors["encoder_last_hidden_state"]: the encoder's output.
  ModelOutput forward(const Batch& batch) override;
  /// forward() with the loss summed over the label tokens and divided by `num_items_in_batch`
  /// (the label tokens of the Trainer's accumulation window), so that accumulated and
  /// distributed steps give the large-batch gradient. transformers 5.24 passes the count to
  /// these models too but their loss ignores it (a mean per micro-batch, not divided by the
  /// accumulation steps either); see docs/seq2seq.md.
  ModelOutput forward_with_num_items(const Batch& batch, int64_t num_items_in_batch) override;
  bool accepts_loss_kwargs() const override { return true; }

  std::optional<nlohmann::json> config() const override;
  const T5Config& t5_config() const { return config_; }
  std::vector<std::string> no_split_modules() const override { return {"T5Block"}; }
  bool supports_gradient_checkpointing() const override { return true; }
  void gradient_checkpointing_enable(bool enable = true) override {
    encoder->set_gradient_checkpointing(enable);
    decoder->set_gradient_checkpointing(enable);
  }
  void set_neftune_noise_alpha(std::optional<double> alpha) override {
    encoder->neftune_noise_alpha = alpha;
    decoder->neftune_noise_alpha = alpha;
  }
  double floating_point_ops(const Batch& batch) const override;

  at::Tensor encode(const at::Tensor& input_ids, const at::Tensor& attention_mask) override;
  at::Tensor decoder_next_token_logits(const at::Tensor& decoder_input_ids,
                                       const at::Tensor& encoder_hidden,
                                       const at::Tensor& encoder_attention_mask,
                                       KeyValueCache& cache, CrossAttentionCache& cross) override;
  int64_t num_decoder_layers() const override { return config_.num_decoder_layers; }
  std::optional<int64_t> max_position_embeddings() const override { return std::nullopt; }

  /// The checkpoint-matching rules, for load_pretrained_weights().
  static WeightLoadOptions weight_load_options(bool tied_head);

  torch::nn::Embedding shared{nullptr};
  T5Stack encoder{nullptr}, decoder{nullptr};
  /// The untied head; null when the head is shared.weight.
  AdaptableLinear lm_head{nullptr};

 private:
  /// forward() and forward_with_num_items(): the loss's divisor is the count when given.
  ModelOutput run(const Batch& batch, std::optional<int64_t> num_items_in_batch);
  /// The logits of the decoder's output `hidden` [B, T, d_model].
  at::Tensor lm_logits(const at::Tensor& hidden);

  T5Config config_;
};

}  // namespace ctrainer
