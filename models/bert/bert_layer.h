#pragma once
/// \file One BERT transformer block (HF BertLayer = BertAttention + BertIntermediate +
/// BertOutput). State-dict names: attention.*, intermediate.dense, output.{dense,LayerNorm}.
#include <string>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <ctrainer/core/forward_hooks.h>
#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/bert/bert_attention.h>
#include <ctrainer/models/bert/bert_config.h>
#include <ctrainer/models/dropout.h>

namespace ctrainer {

/// The feed-forward expansion: hidden_act(dense(x)), hidden_size -> intermediate_size.
class BertIntermediateImpl : public torch::nn::Module {
 public:
  explicit BertIntermediateImpl(const BertConfig& config);
  at::Tensor forward(const at::Tensor& hidden);

  AdaptableLinear dense{nullptr};

 private:
  std::string activation_;
};
TORCH_MODULE(BertIntermediate);

/// The feed-forward contraction with residual: LayerNorm(dropout(dense(x)) + input).
class BertOutputImpl : public torch::nn::Module {
 public:
  explicit BertOutputImpl(const BertConfig& config);
  at::Tensor forward(const at::Tensor& intermediate, const at::Tensor& input);

  AdaptableLinear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // NOLINT: HF's state_dict name
  Dropout dropout{nullptr};  // ctrainer::Dropout: torch's distribution, a cheaper CPU mask
};
TORCH_MODULE(BertOutput);

/// Attention then feed-forward, each with its residual LayerNorm (post-norm, as BERT).
class BertLayerImpl : public torch::nn::Module {
 public:
  explicit BertLayerImpl(const BertConfig& config);
  /// hidden [B, T, H], mask additive [B, 1, 1, T] or undefined -> [B, T, H], or only the first
  /// `query_length` positions [B, query_length, H] when query_length >= 0 (every position still
  /// serves as a key and a value: the same rows as the full output, for less work).
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, int64_t query_length = -1);

  BertAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertOutput output{nullptr};

 private:
  /// ZeRO-3 / FSDP wrap BertLayer as a unit (fsdp_transformer_layer_cls_to_wrap BertLayer).
  ForwardHookPoint hook_point_{*this};
};
TORCH_MODULE(BertLayer);

}  // namespace ctrainer
