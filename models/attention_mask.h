#pragma once
/// \file The attention masks decoders hand to SDPA, built as transformers' create_causal_mask
/// builds them for its SDPA attention.
#include <cstdint>

#include <ATen/ATen.h>

namespace ctrainer {

/// The boolean attention mask [B, 1, T, T] (true = attend) for causal attention over the tokens
/// of `attention_mask` [B, T] (1 = token); undefined when every token is attended, so SDPA's
/// is_causal does the causal part without a materialised mask, as transformers skips it. Rows
/// that attend to nothing (left padding) are SDPA's to handle, as in transformers.
at::Tensor causal_padding_mask(const at::Tensor& attention_mask, int64_t length);

/// Which sequence each token of a packed row belongs to (transformers'
/// find_packed_sequence_indices): a new sequence starts wherever position_ids [B, T] does not
/// step by one, so [[0,1,0,1,2,0]] gives [[0,0,1,1,1,2]]. Undefined when no row holds more than
/// one sequence.
at::Tensor packed_sequence_indices(const at::Tensor& position_ids);

/// The mask SDPA gets in a decoder: causal_padding_mask when `attention_mask` is given (as
/// transformers, which looks for packing only without one); else, when `position_ids` packs
/// several sequences into a row (DataCollatorWithFlattening), the block-diagonal causal mask
/// [B, 1, T, T] that keeps attention inside each sequence; else undefined (is_causal).
at::Tensor decoder_attention_mask(const at::Tensor& attention_mask, const at::Tensor& position_ids,
                                  int64_t length);

/// The mask SDPA gets when `length` new tokens follow `past` positions held in a key/value cache
/// (generation): boolean [B or 1, 1, length, past + length], query i (at position past + i)
/// attending the keys 0..past + i that `attention_mask` [B, past + length] (1 = token; undefined:
/// every position) keeps. Undefined when SDPA needs no mask: without padding, either nothing is
/// cached (is_causal does the causal part) or one token is new (it attends every key); callers
/// set is_causal only when nothing is cached.
at::Tensor cached_causal_mask(const at::Tensor& attention_mask, int64_t past, int64_t length);

}  // namespace ctrainer
