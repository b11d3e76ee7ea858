#pragma once
/// \file What generate() needs of a decoder-only language model (GPT2LMHeadModel,
/// LlamaForCausalLM, ...): one forward over new tokens that extends a key/value cache and gives
/// the next-token logits.
#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>

#include <ctrainer/models/kv_cache.h>

namespace ctrainer {

class CausalLanguageModel {
 public:
  virtual ~CausalLanguageModel() = default;

  /// The logits [B, vocab_size] of the token after each row of `input_ids` [B, T] (the last
  /// position's only, as transformers' logits_to_keep=1), in the model's dtype. The T tokens
  /// follow the cache.length() positions `cache` holds, and their keys and values are appended
  /// to it. `attention_mask` [B, cache.length() + T] (1 = token) may be undefined when every
  /// position is a token; `position_ids` [B, T] default to the positions after the cache's.
  virtual at::Tensor next_token_logits(const at::Tensor& input_ids,
                                       const at::Tensor& attention_mask,
                                       const at::Tensor& position_ids, KeyValueCache& cache) = 0;

  /// The number of decoder layers, i.e. of the layers a cache for this model holds.
  virtual int64_t num_decoder_layers() const = 0;

  /// config.json's max_position_embeddings (GPT-2's n_positions), which caps generate()'s default
  /// max_length as transformers caps it; nothing when the config has none.
  virtual std::optional<int64_t> max_position_embeddings() const = 0;
};

}  // namespace ctrainer
