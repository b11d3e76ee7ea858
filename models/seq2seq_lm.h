#pragma once
/// \file What generate() needs of an encoder-decoder language model (T5ForConditionalGeneration,
/// ...): the encoder's output once, then decoder steps that extend a key/value cache and give the
/// next-token logits.
#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>

#include <ctrainer/models/kv_cache.h>

namespace ctrainer {

class Seq2SeqLanguageModel {
 public:
  virtual ~Seq2SeqLanguageModel() = default;

  /// The encoder's last hidden state [B, S, hidden] of `input_ids` [B, S]; `attention_mask`
  /// [B, S] (1 = token) may be undefined (every token attended).
  virtual at::Tensor encode(const at::Tensor& input_ids, const at::Tensor& attention_mask) = 0;

  /// The logits [B, vocab_size] of the token after each row of `decoder_input_ids` [B, T] (the
  /// last position's only), whose T tokens follow the cache.length() positions `cache` holds;
  /// their self-attention keys and values are appended to it. The decoder attends
  /// `encoder_hidden` where `encoder_attention_mask` (or undefined) allows; `cross` holds the
  /// cross-attention's keys and values (filled at the first step, then reused).
  virtual at::Tensor decoder_next_token_logits(const at::Tensor& decoder_input_ids,
                                               const at::Tensor& encoder_hidden,
                                               const at::Tensor& encoder_attention_mask,
                                               KeyValueCache& cache,
                                               CrossAttentionCache& cross) = 0;

  /// The number of decoder layers (a cache's layers).
  virtual int64_t num_decoder_layers() const = 0;
  /// config.json's max_position_embeddings, which caps generate()'s default max_length; nothing
  /// when the model has none (T5).
  virtual std::optional<int64_t> max_position_embeddings() const = 0;
};

}  // namespace ctrainer
