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

}  // namespace ctrainer
