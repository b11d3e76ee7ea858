#pragma once
/// \file The token-level cross-entropy of the LM heads (causal, masked and seq2seq): the values of
/// at::cross_entropy_loss with an ignore index, computed on fp32 CPU logits a few rows at a time.
/// A GPT-2 step's logits are 1024 × 50257 floats (206 MB): log_softmax, nll_loss and their
/// backwards pass over that several times and materialise three more tensors of its size (the
/// log-probabilities, nll's dense zero-filled gradient, the logits' gradient), each pass from
/// memory. Row chunks that fit the cache read the logits once forward and once backward, and
/// write only the gradient (GPT-2 124M on 2 cores: 188 -> 44 ms per step).
#include <cstdint>

#include <ATen/ATen.h>
#include <ATen/core/Reduction.h>

namespace ctrainer {

/// Cross-entropy of `logits` [N, V] against class indices `targets` [N] (integer), skipping the
/// targets equal to `ignore_index`: their sum (at::Reduction::Sum) or their mean
/// (at::Reduction::Mean; NaN when every target is ignored, as torch's). Differentiable in
/// `logits` (once: no double backward). Targets outside [0, V) other than `ignore_index` throw
/// std::invalid_argument. fp32 CPU logits take the row-chunked kernel (`chunk_rows` rows at a
/// time; 0 picks rows of about 8 MiB); other logits (CUDA, half precision) take
/// at::cross_entropy_loss itself.
at::Tensor token_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                               at::Reduction::Reduction reduction, int64_t ignore_index = -100,
                               int64_t chunk_rows = 0);

}  // namespace ctrainer
