#pragma once
/// \file BERT multi-head self-attention (HF BertSelfAttention + BertSelfOutput = BertAttention).
/// State-dict names: attention.self.{query,key,value}, attention.output.{dense,LayerNorm}.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/bert/bert_config.h>
#include <ctrainer/models/dropout.h>

namespace ctrainer {

/// The first `query_length` positions of `hidden` [B, T, H] (all of it when query_length < 0 or
/// = T), as a view.
at::Tensor leading_positions(const at::Tensor& hidden, int64_t query_length);

/// Scaled dot-product attention over all heads (at::scaled_dot_product_attention, fused kernels
/// where they apply), with dropout attention_probs_dropout_prob on the weights in training.
class BertSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit BertSelfAttentionImpl(const BertConfig& config);
  /// hidden [B, T, H]; mask: additive [B, 1, 1, T] (see extended_attention_mask) or undefined.
  /// Every position is a key and a value; the first `query_length` positions (all when < 0) are
  /// the queries. Returns the context [B, query_length, H] (heads concatenated, before the
  /// output projection): the rows the full attention would give for those positions.
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, int64_t query_length = -1);

  AdaptableLinear query{nullptr}, key{nullptr}, value{nullptr};

 private:
  int64_t num_heads_;
  double dropout_prob_;
};
TORCH_MODULE(BertSelfAttention);

/// Output projection, dropout and the residual LayerNorm: LayerNorm(dropout(dense(x)) + input).
class BertSelfOutputImpl : public torch::nn::Module {
 public:
  explicit BertSelfOutputImpl(const BertConfig& config);
  at::Tensor forward(const at::Tensor& context, const at::Tensor& input);

  AdaptableLinear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // NOLINT: HF's state_dict name
  Dropout dropout{nullptr};  // ctrainer::Dropout: torch's distribution, a cheaper CPU mask
};
TORCH_MODULE(BertSelfOutput);

/// HF BertAttention: children "self" and "output".
class BertAttentionImpl : public torch::nn::Module {
 public:
  explicit BertAttentionImpl(const BertConfig& config);
  /// [B, T, H] -> [B, query_length, H] (all T positions when query_length < 0); see
  /// BertSelfAttentionImpl::forward.
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, int64_t query_length = -1);

  BertSelfAttention self{nullptr};
  BertSelfOutput output{nullptr};
};
TORCH_MODULE(BertAttention);

}  // namespace ctrainer
