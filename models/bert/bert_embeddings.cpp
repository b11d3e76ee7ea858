#include <ctrainer/models/bert/bert_embeddings.h>
#include <ctrainer/models/neftune.h>

#include <ctrainer/core/errors.h>

namespace ctrainer {

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertConfig& c) {
  auto words = torch::nn::EmbeddingOptions(c.vocab_size, c.hidden_size);
  if (c.pad_token_id) words.padding_idx(*c.pad_token_id);
  word_embeddings = register_module("word_embeddings", torch::nn::Embedding(words));
  position_embeddings = register_module(
      "position_embeddings", torch::nn::Embedding(c.max_position_embeddings, c.hidden_size));
  token_type_embeddings = register_module("token_type_embeddings",
                                          torch::nn::Embedding(c.type_vocab_size, c.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps)));
  dropout = register_module("dropout", Dropout(c.hidden_dropout_prob));
}

at::Tensor BertEmbeddingsImpl::forward(const at::Tensor& input_ids,
                                       const at::Tensor& token_type_ids) {
  if (input_ids.dim() != 2)
    throw ArgumentError("input_ids must be [batch, sequence], got " +
                        std::to_string(input_ids.dim()) + " dimensions");
  const int64_t length = input_ids.size(1);
  const int64_t max_positions = position_embeddings->weight.size(0);
  if (length > max_positions)
    throw ArgumentError("input_ids has " + std::to_string(length) +
                        " tokens per sequence but the model has max_position_embeddings = " +
                        std::to_string(max_positions) + "; truncate the inputs (max_seq_length)");
  if (token_type_ids.defined() && token_type_ids.sizes() != input_ids.sizes())
    throw ArgumentError("token_type_ids must have the shape of input_ids");
  // HF's order of additions: (words + token types) + positions.
  auto hooks = hook_point_.enter();
  at::Tensor embeddings =
      with_neftune_noise(word_embeddings->forward(input_ids), neftune_noise_alpha, is_training());
  if (token_type_ids.defined()) {
    embeddings = embeddings + token_type_embeddings->forward(token_type_ids);
  } else {
    embeddings = embeddings + token_type_embeddings->weight[0];
  }
  at::Tensor positions = at::arange(length, input_ids.options().dtype(at::kLong));
  embeddings = embeddings + position_embeddings->forward(positions).unsqueeze(0);
  return hooks.finish(dropout->forward(LayerNorm->forward(embeddings)));
}

}  // namespace ctrainer
