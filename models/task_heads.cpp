#include <ctrainer/models/task_heads.h>

#include <ATen/TensorIndexing.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/padding.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/linear_kernel.h>
#include <ctrainer/models/token_cross_entropy.h>

namespace ctrainer {

at::Tensor sequence_classification_loss(const at::Tensor& logits, const at::Tensor& labels,
                                        std::optional<std::string>& problem_type) {
  namespace F = torch::nn::functional;
  const int64_t num_labels = logits.size(-1);
  if (!problem_type) {
    // HF mutates config.problem_type on the first labelled batch, and so it is saved.
    if (num_labels == 1) {
      problem_type = "regression";
    } else if (labels.scalar_type() == at::kLong || labels.scalar_type() == at::kInt) {
      problem_type = "single_label_classification";
    } else {
      problem_type = "multi_label_classification";
    }
  }
  if (*problem_type == "regression") {
    at::Tensor target = labels.to(logits.scalar_type());
    if (num_labels == 1) return F::mse_loss(logits.squeeze(), target.squeeze());
    return F::mse_loss(logits, target);
  }
  if (*problem_type == "single_label_classification") {
    if (labels.is_floating_point())
      throw ArgumentError(
          "labels must be integer class ids for single_label_classification, got a floating-point "
          "tensor (set problem_type to regression or multi_label_classification?)");
    return F::cross_entropy(logits.view({-1, num_labels}), labels.view({-1}).to(at::kLong));
  }
  // multi_label_classification
  if (labels.sizes() != logits.sizes())
    throw ArgumentError("multi_label_classification labels must be [batch, num_labels] = " +
                        std::to_string(logits.size(0)) + " x " + std::to_string(num_labels) +
                        " (0/1 per label)");
  return F::binary_cross_entropy_with_logits(logits, labels.to(logits.scalar_type()));
}

at::Tensor causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels,
                          std::optional<int64_t> num_items_in_batch,
                          const at::Tensor& shift_labels) {
  namespace F = torch::nn::functional;
  constexpr int64_t kIgnoreIndex = -100;
  const at::Tensor shifted =
      shift_labels.defined()
          ? shift_labels.to(at::kLong)
          : F::pad(labels.to(at::kLong), F::PadFuncOptions({0, 1}).value(kIgnoreIndex))
                .narrow(-1, 1, labels.size(-1));
  at::Tensor loss = token_cross_entropy(
      logits.to(at::kFloat).reshape({-1, logits.size(-1)}), shifted.reshape({-1}),
      num_items_in_batch ? at::Reduction::Sum : at::Reduction::Mean, kIgnoreIndex);
  if (num_items_in_batch) loss = loss / static_cast<double>(*num_items_in_batch);
  return loss;
}

at::Tensor last_non_pad_hidden(const at::Tensor& hidden, const at::Tensor& input_ids,
                               std::optional<int64_t> pad_token_id,
                               const std::string& model_class) {
  const int64_t batch_size = input_ids.size(0), length = input_ids.size(1);
  at::Tensor last;
  if (pad_token_id) {
    const at::Tensor not_pad = input_ids.ne(*pad_token_id).to(at::kInt);
    last = (at::arange(length, input_ids.options().dtype(at::kInt)) * not_pad).argmax(-1);
  } else if (batch_size != 1) {
    throw ArgumentError(model_class +
                        ": cannot handle batches of more than one sequence without a padding "
                        "token: set pad_token_id in config.json (the eos id is the usual choice) "
                        "or use batches of one");
  } else {
    last = at::full({1}, length - 1, input_ids.options().dtype(at::kLong));
  }
  return hidden.index(
      {at::arange(batch_size, input_ids.options().dtype(at::kLong)), last.to(at::kLong)});
}

ModelOutput causal_lm_output(const at::Tensor& hidden, AdaptableLinear& lm_head,
                             const at::Tensor& tied_embedding, const Batch& batch,
                             std::optional<int64_t> num_items_in_batch) {
  ModelOutput out;
  out.logits = lm_head ? lm_head->forward(hidden) : ctrainer::linear(hidden, tied_embedding);
  // As transformers: a loss only with labels; a batch's shift_labels (already shifted, from
  // collators that shift themselves) replace the labels' own shift.
  if (batch.contains("labels"))
    out.loss =
        causal_lm_loss(out.logits, batch.at("labels"), num_items_in_batch,
                       batch.contains("shift_labels") ? batch.at("shift_labels") : at::Tensor());
  return out;
}

at::Tensor last_position_logits(const at::Tensor& hidden, AdaptableLinear& lm_head,
                                const at::Tensor& tied_embedding) {
  const at::Tensor last = hidden.narrow(1, hidden.size(1) - 1, 1);
  return (lm_head ? lm_head->forward(last) : ctrainer::linear(last, tied_embedding)).squeeze(1);
}

ModelOutput seq2seq_lm_output(const at::Tensor& logits, const at::Tensor& encoder_hidden,
                              const Batch& batch, std::optional<int64_t> num_items_in_batch) {
  ModelOutput out;
  out.logits = logits;
  out.tensors["encoder_last_hidden_state"] = encoder_hidden;
  if (!batch.contains("labels")) return out;
  const at::Tensor flat_logits = logits.reshape({-1, logits.size(-1)});
  const at::Tensor flat_labels = batch.at("labels").to(at::kLong).reshape({-1});
  if (num_items_in_batch)
    out.loss = token_cross_entropy(flat_logits, flat_labels, at::Reduction::Sum) /
               static_cast<double>(*num_items_in_batch);
  else
    out.loss = token_cross_entropy(flat_logits, flat_labels, at::Reduction::Mean);
  return out;
}

ModelOutput decoder_classification_output(const at::Tensor& hidden, AdaptableLinear& score,
                                          const Batch& batch, std::optional<int64_t> pad_token_id,
                                          std::optional<std::string>& problem_type,
                                          const std::string& model_class) {
  ModelOutput out;
  out.logits =
      score->forward(last_non_pad_hidden(hidden, batch.at("input_ids"), pad_token_id, model_class));
  if (batch.contains("labels"))
    out.loss = sequence_classification_loss(out.logits, batch.at("labels"), problem_type);
  return out;
}

}  // namespace ctrainer
