#include <ctrainer/models/simple/transformer_classifier.h>

#include <torch/nn/functional/loss.h>

namespace ctrainer {

TransformerClassifier::TransformerClassifier(const TransformerClassifierConfig& c) {
  tokens_ = register_module("tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  positions_ = register_module("positions", torch::nn::Embedding(c.max_positions, c.hidden_size));
  auto layer = torch::nn::TransformerEncoderLayer(
      torch::nn::TransformerEncoderLayerOptions(c.hidden_size, c.num_heads)
          .dim_feedforward(c.intermediate_size)
          .dropout(c.dropout)
          .activation(torch::kGELU));
  encoder_ = register_module(
      "encoder",
      torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(layer, c.num_layers)));
  classifier_ = register_module("classifier", torch::nn::Linear(c.hidden_size, c.num_labels));
}

ModelOutput TransformerClassifier::forward(const Batch& batch) {
  const at::Tensor& ids = batch.at("input_ids");
  const int64_t seq = ids.size(1);
  at::Tensor pos = at::arange(seq, ids.options());
  // torch's encoder is sequence-first: [T, B, H].
  at::Tensor h = (tokens_->forward(ids) + positions_->forward(pos).unsqueeze(0)).transpose(0, 1);
  const bool padded = batch.contains("attention_mask");
  at::Tensor mask = padded ? batch.at("attention_mask") : at::ones_like(ids);
  // Without padding no key mask is passed: an all-false mask changes nothing but costs a
  // masked fill of every score.
  h = encoder_->forward(h, /*src_mask=*/{},
                        /*src_key_padding_mask=*/padded ? mask.eq(0) : at::Tensor());
  // Mean over real tokens only.
  at::Tensor m = mask.transpose(0, 1).unsqueeze(-1).to(h.scalar_type());
  at::Tensor pooled = (h * m).sum(0) / m.sum(0).clamp_min(1.0);
  ModelOutput out;
  out.logits = classifier_->forward(pooled);
  if (batch.contains("labels"))
    out.loss = torch::nn::functional::cross_entropy(out.logits, batch.at("labels"));
  return out;
}

}  // namespace ctrainer
