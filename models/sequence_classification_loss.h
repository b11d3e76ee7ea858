#pragma once
/// \file The loss of every sequence-classification head, as transformers computes it
/// (ForSequenceClassificationLoss): regression -> MSE, single_label_classification ->
/// cross-entropy, multi_label_classification -> BCE with logits.
#include <optional>
#include <string>

#include <ATen/ATen.h>

namespace ctrainer {

/// The loss of `logits` [B, num_labels] against `labels`. An unset `problem_type` is set as HF
/// sets config.problem_type on the first labelled batch (num_labels 1 -> regression; integer
/// labels -> single_label_classification; otherwise multi-label), so it is saved with the model.
/// Floating-point labels for single-label classification and multi-label labels of the wrong
/// shape throw ArgumentError.
at::Tensor sequence_classification_loss(const at::Tensor& logits, const at::Tensor& labels,
                                        std::optional<std::string>& problem_type);

}  // namespace ctrainer
