#pragma once
/// \file BartForConditionalGeneration, as transformers names it: BartModel under "model", the
/// language-modelling head (shared.weight unless the checkpoint holds a different lm_head.weight)
/// and the final_logits_bias buffer added to the logits.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/bart/bart_config.h>
#include <ctrainer/models/bart/bart_model.h>
#include <ctrainer/models/model.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/seq2seq_lm.h>

namespace ctrainer {

class BartForConditionalGeneration : public Model, public Seq2SeqLanguageModel {
 public:
  /// A model of `config`; the head is model.shared.weight unless config.tie_word_embeddings is
  /// false. `initialise_weights`: HF's initialisation from the global generator.
  explicit BartForConditionalGeneration(const BartConfig& config, bool initialise_weights = true);

  /// The weights of `path`. As transformers 5: a checkpoint holding an lm_head.weight that
  /// differs from model.shared.weight keeps its own head; otherwise the head is tied (as
  /// tie_word_embeddings asks). The tied copies older checkpoints hold
  /// (model.encoder/decoder.embed_tokens.weight) are ignored.
  static std::shared_ptr<BartForConditionalGeneration> from_pretrained(
      const BartConfig& config, const std::string& path, bool ignore_mismatched_sizes = false);

  /// Batch: "input_ids" [B, S]; optional "attention_mask", "decoder_input_ids" (else made from
  /// "labels" by shift_tokens_right with decoder_start_token_id, -100 as pad_token_id, or from
  /// input_ids without labels, as BartModel does), "decoder_attention_mask", "labels" (-100 =
  /// ignored). Logits [B, T, vocab_size] = lm_head(decoder output) + final_logits_bias; loss: the
  /// mean cross-entropy over labels that are not -100.
  ModelOutput forward(const Batch& batch) override;
  /// forward() with the loss summed over the label tokens and divided by `num_items_in_batch`
  /// (the label tokens of the Trainer's accumulation window), so that accumulated and
  /// distributed steps give the large-batch gradient. transformers 5.24 passes the count to
  /// these models too but their loss ignores it (a mean per micro-batch, not divided by the
  /// accumulation steps either); see docs/seq2seq.md.
  ModelOutput forward_with_num_items(const Batch& batch, int64_t num_items_in_batch) override;
  bool accepts_loss_kwargs() const override { return true; }

  std::optional<nlohmann::json> config() const override;
  const BartConfig& bart_config() const { return config_; }
  std::vector<std::string> no_split_modules() const override {
    return {"BartEncoderLayer", "BartDecoderLayer"};
  }
  bool supports_gradient_checkpointing() const override { return true; }
  void gradient_checkpointing_enable(bool enable = true) override {
    model->set_gradient_checkpointing(enable);
  }
  void set_neftune_noise_alpha(std::optional<double> alpha) override {
    model->neftune_noise_alpha = alpha;
  }

  at::Tensor encode(const at::Tensor& input_ids, const at::Tensor& attention_mask) override;
  at::Tensor decoder_next_token_logits(const at::Tensor& decoder_input_ids,
                                       const at::Tensor& encoder_hidden,
                                       const at::Tensor& encoder_attention_mask,
                                       KeyValueCache& cache, CrossAttentionCache& cross) override;
  int64_t num_decoder_layers() const override { return config_.decoder_layers; }
  std::optional<int64_t> max_position_embeddings() const override {
    return config_.max_position_embeddings;
  }

  static WeightLoadOptions weight_load_options(bool tied_head);

  BartModel model{nullptr};
  AdaptableLinear lm_head{nullptr};  ///< null when tied
  at::Tensor final_logits_bias;      ///< buffer [1, vocab_size]

 private:
  /// forward() and forward_with_num_items(): the loss's divisor is the count when given.
  ModelOutput run(const Batch& batch, std::optional<int64_t> num_items_in_batch);
  at::Tensor lm_logits(const at::Tensor& hidden);
  BartConfig config_;
};

}  // namespace ctrainer
