#include <ctrainer/models/bert/bert_attention.h>

#include <optional>

#include <ATen/ops/scaled_dot_product_attention.h>

namespace ctrainer {

BertSelfAttentionImpl::BertSelfAttentionImpl(const BertConfig& c)
    : num_heads_(c.num_attention_heads), dropout_prob_(c.attention_probs_dropout_prob) {
  query = register_module("query", torch::nn::Linear(c.hidden_size, c.hidden_size));
  key = register_module("key", torch::nn::Linear(c.hidden_size, c.hidden_size));
  value = register_module("value", torch::nn::Linear(c.hidden_size, c.hidden_size));
}

at::Tensor BertSelfAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask) {
  const int64_t batch = hidden.size(0), length = hidden.size(1), width = hidden.size(2);
  // [B, T, H] -> [B, heads, T, head_dim] (HF transpose_for_scores).
  auto heads = [&](const at::Tensor& x) {
    return x.view({batch, length, num_heads_, width / num_heads_}).permute({0, 2, 1, 3});
  };
  // HF BertSdpaSelfAttention: softmax(q k^T / sqrt(head_dim) + mask) v, dropout on the
  // probabilities only in training; torch picks a fused kernel where one applies.
  std::optional<at::Tensor> additive_mask;
  if (mask.defined()) additive_mask = mask;
  at::Tensor context = at::scaled_dot_product_attention(
      heads(query->forward(hidden)), heads(key->forward(hidden)), heads(value->forward(hidden)),
      additive_mask, is_training() ? dropout_prob_ : 0.0, /*is_causal=*/false);
  return context.permute({0, 2, 1, 3}).reshape({batch, length, width});
}

BertSelfOutputImpl::BertSelfOutputImpl(const BertConfig& c) {
  dense = register_module("dense", torch::nn::Linear(c.hidden_size, c.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps)));
  dropout = register_module("dropout", torch::nn::Dropout(c.hidden_dropout_prob));
}

at::Tensor BertSelfOutputImpl::forward(const at::Tensor& context, const at::Tensor& input) {
  return LayerNorm->forward(dropout->forward(dense->forward(context)) + input);
}

BertAttentionImpl::BertAttentionImpl(const BertConfig& c) {
  self = register_module("self", BertSelfAttention(c));
  output = register_module("output", BertSelfOutput(c));
}

at::Tensor BertAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask) {
  return output->forward(self->forward(hidden, mask), hidden);
}

}  // namespace ctrainer
