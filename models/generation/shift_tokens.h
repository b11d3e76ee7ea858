#pragma once
/// \file Decoder inputs from labels, as transformers' encoder-decoder models make them
/// (shift_tokens_right of BART, T5's _shift_right, prepare_decoder_input_ids_from_labels).
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace ctrainer::generation {

/// `labels` [batch, length] shifted one position to the right: `decoder_start_token_id` first,
/// the last label dropped, and the -100s that mark ignored labels replaced by `pad_token_id`.
at::Tensor shift_tokens_right(const at::Tensor& labels, int64_t pad_token_id,
                              int64_t decoder_start_token_id);

}  // namespace ctrainer::generation
