#pragma once
/// \file BERT multi-head self-attention (HF BertSelfAttention + BertSelfOutput = BertAttention).
/// State-dict names: attention.self.{query,key,value}, attention.output.{dense,LayerNorm}.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <ctrainer/models/bert/bert_config.h>
#include <ctrainer/models/dropout.h>

namespace ctrainer {

/// Scaled dot-product attention over all heads (at::scaled_dot_product_attention, fused kernels
/// where they apply), with dropout attention_probs_dropout_prob on the weights in training.
class BertSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit BertSelfAttentionImpl(const BertConfig& config);
  /// hidden [B, T, H]; mask: additive [B, 1, 1, T] (see extended_attention_mask) or undefined.
  /// Returns the context [B, T, H] (heads concatenated, before the output projection).
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask);

  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr};

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

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // NOLINT: HF's state_dict name
  Dropout dropout{nullptr};  // ctrainer::Dropout: torch's distribution, a cheaper CPU mask
};
TORCH_MODULE(BertSelfOutput);

/// HF BertAttention: children "self" and "output".
class BertAttentionImpl : public torch::nn::Module {
 public:
  explicit BertAttentionImpl(const BertConfig& config);
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask);

  BertSelfAttention self{nullptr};
  BertSelfOutput output{nullptr};
};
TORCH_MODULE(BertAttention);

}  // namespace ctrainer
