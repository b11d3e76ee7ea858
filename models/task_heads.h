#pragma once
/// \file What the task heads of every family share, as transformers computes it: the
/// sequence-classification loss (ForSequenceClassificationLoss), the causal-LM loss
/// (ForCausalLMLoss) and the last-token pooling of decoder classifiers
/// (GenericForSequenceClassification).
#include <optional>
#include <string>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/model.h>

namespace ctrainer {

/// Regression -> MSE, single_label_classification -> cross-entropy, multi_label_classification ->
/// BCE with logits: the loss of `logits` [B, num_labels] against `labels`. An unset `problem_type`
/// is set as HF sets config.problem_type on the first labelled batch (num_labels 1 -> regression;
/// integer labels -> single_label_classification; otherwise multi-label), so it is saved with the
/// model. Floating-point labels for single-label classification and multi-label labels of the wrong
/// shape throw ArgumentError.
at::Tensor sequence_classification_loss(const at::Tensor& logits, const at::Tensor& labels,
                                        std::optional<std::string>& problem_type);

/// transformers' ForCausalLMLoss: labels padded with -100 on the right and shifted left by one
/// (or `shift_labels` [B, T], already shifted, as given), cross-entropy of the fp32 logits
/// [B, T, V] over the targets that are not -100: their mean (NaN when there are none, as
/// torch's), or, given `num_items_in_batch` (the targets of the whole accumulation window),
/// their sum divided by it.
at::Tensor causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels,
                          std::optional<int64_t> num_items_in_batch = std::nullopt,
                          const at::Tensor& shift_labels = {});

/// What a decoder classifier reads: the rows [B, H] of `hidden` [B, T, H] at each sequence's
/// rightmost token of `input_ids` [B, T] that is not `pad_token_id` (so left and right padding
/// both work); without a pad_token_id the last position, and only for batches of one sequence
/// (ArgumentError naming `model_class` otherwise), as transformers does.
at::Tensor last_non_pad_hidden(const at::Tensor& hidden, const at::Tensor& input_ids,
                               std::optional<int64_t> pad_token_id, const std::string& model_class);

/// A causal LM head's output: logits of `hidden` through `lm_head`, or through the token
/// embedding `tied_embedding` when lm_head is null (tie_word_embeddings), and causal_lm_loss()
/// when the batch carries "labels" (its "shift_labels" instead of their shift when it has them;
/// normalised by `num_items_in_batch` when given).
ModelOutput causal_lm_output(const at::Tensor& hidden, AdaptableLinear& lm_head,
                             const at::Tensor& tied_embedding, const Batch& batch,
                             std::optional<int64_t> num_items_in_batch = std::nullopt);

/// The next-token logits [B, vocab] of the last position of `hidden` [B, T, H]: through
/// `lm_head`, or the tied `tied_embedding` when lm_head is null (what generation reads; the
/// other positions' logits are not computed, as transformers' logits_to_keep=1).
at::Tensor last_position_logits(const at::Tensor& hidden, AdaptableLinear& lm_head,
                                const at::Tensor& tied_embedding);

/// An encoder-decoder LM's output (T5, BART): `logits` [B, T, V], the encoder's output as
/// tensors["encoder_last_hidden_state"], and with the batch's "labels" [B, T] the mean
/// cross-entropy over those that are not -100 (transformers' CrossEntropyLoss, unshifted: the
/// decoder inputs are the shifted labels); with `num_items_in_batch`, the sum of those
/// cross-entropies divided by it instead (the Trainer's token-level loss: the label tokens of the
/// whole accumulation window).
ModelOutput seq2seq_lm_output(const at::Tensor& logits, const at::Tensor& encoder_hidden,
                              const Batch& batch,
                              std::optional<int64_t> num_items_in_batch = std::nullopt);

/// A decoder classifier's output: `score` of last_non_pad_hidden(), and
/// sequence_classification_loss() when the batch carries "labels".
ModelOutput decoder_classification_output(const at::Tensor& hidden, AdaptableLinear& score,
                                          const Batch& batch, std::optional<int64_t> pad_token_id,
                                          std::optional<std::string>& problem_type,
                                          const std::string& model_class);

}  // namespace ctrainer
