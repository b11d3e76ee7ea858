#include <ctrainer/models/bert/bert_attention.h>

#include <ctrainer/models/attention.h>

namespace ctrainer {

at::Tensor leading_positions(const at::Tensor& hidden, int64_t query_length) {
  if (query_length < 0 || query_length == hidden.size(1)) return hidden;
  return hidden.narrow(1, 0, query_length);
}

BertSelfAttentionImpl::BertSelfAttentionImpl(const BertConfig& c)
    : num_heads_(c.num_attention_heads), dropout_prob_(c.attention_probs_dropout_prob) {
  query = register_module("query", AdaptableLinear(c.hidden_size, c.hidden_size));
  key = register_module("key", AdaptableLinear(c.hidden_size, c.hidden_size));
  value = register_module("value", AdaptableLinear(c.hidden_size, c.hidden_size));
}

at::Tensor BertSelfAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                          int64_t query_length) {
  const int64_t batch = hidden.size(0), width = hidden.size(2);
  const at::Tensor queries_in = leading_positions(hidden, query_length);
  const int64_t queries = queries_in.size(1);
  // [B, T, H] -> [B, heads, T, head_dim] (HF transpose_for_scores).
  auto heads = [&](const at::Tensor& x) {
    return x.view({batch, x.size(1), num_heads_, width / num_heads_}).permute({0, 2, 1, 3});
  };
  // HF BertSdpaSelfAttention: softmax(q k^T / sqrt(head_dim) + mask) v, dropout on the
  // probabilities only in training. Each query row is independent of the others, so fewer
  // queries give exactly those rows.
  const at::Tensor q = heads(query->forward(queries_in));
  const at::Tensor k = heads(key->forward(hidden));
  const at::Tensor v = heads(value->forward(hidden));
  const at::Tensor context =
      attention(q, k, v, mask, dropout_prob_, is_training(), /*is_causal=*/false);
  return context.permute({0, 2, 1, 3}).reshape({batch, queries, width});
}

BertSelfOutputImpl::BertSelfOutputImpl(const BertConfig& c) {
  dense = register_module("dense", AdaptableLinear(c.hidden_size, c.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps)));
  dropout = register_module("dropout", Dropout(c.hidden_dropout_prob));
}

at::Tensor BertSelfOutputImpl::forward(const at::Tensor& context, const at::Tensor& input) {
  return LayerNorm->forward(dropout->forward(dense->forward(context)) + input);
}

BertAttentionImpl::BertAttentionImpl(const BertConfig& c) {
  self = register_module("self", BertSelfAttention(c));
  output = register_module("output", BertSelfOutput(c));
}

at::Tensor BertAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                      int64_t query_length) {
  return output->forward(self->forward(hidden, mask, query_length),
                         leading_positions(hidden, query_length));
}

}  // namespace ctrainer
