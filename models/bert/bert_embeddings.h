#pragma once
/// \file BertEmbeddings: word + token-type + absolute position embeddings, LayerNorm, dropout
/// (HF modeling_bert.BertEmbeddings; parameter names word_embeddings, position_embeddings,
/// token_type_embeddings, LayerNorm).
#include <optional>

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>

#include <ctrainer/core/forward_hooks.h>
#include <ctrainer/models/bert/bert_config.h>
#include <ctrainer/models/dropout.h>

namespace ctrainer {

class BertEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit BertEmbeddingsImpl(const BertConfig& config);

  /// input_ids [B, T] (int64); token_type_ids [B, T] or undefined (all zeros, HF's default).
  /// Positions are 0..T-1. Returns [B, T, hidden_size]. Throws ArgumentError when T exceeds
  /// max_position_embeddings or the shapes disagree.
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids);

  /// NEFTune noise on word_embeddings' output while training (unset: none).
  std::optional<double> neftune_noise_alpha;

  torch::nn::Embedding word_embeddings{nullptr};
  torch::nn::Embedding position_embeddings{nullptr};
  torch::nn::Embedding token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // NOLINT: HF's attribute name is the state_dict key
  Dropout dropout{nullptr};  // ctrainer::Dropout: torch's distribution, a cheaper CPU mask

 private:
  /// ZeRO-3 / FSDP may wrap the embeddings as a unit of their own.
  ForwardHookPoint hook_point_{*this};
};
TORCH_MODULE(BertEmbeddings);

}  // namespace ctrainer
