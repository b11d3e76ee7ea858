#pragma once
/// \file Scaled dot-product attention as the model families call it: torch's SDPA, except on
/// the CPU with attention dropout in training, where SDPA's unfused path would draw its dropout
/// mask element by element from the generator.
#include <optional>

#include <ATen/ATen.h>

namespace ctrainer {

/// softmax(q kᵀ · scale + mask) v, with dropout of probability `dropout_p` on the attention
/// probabilities when `training`: what at::scaled_dot_product_attention computes. q [.., L, E],
/// k [.., S, E], v [.., S, Ev]; `mask` undefined, boolean (true = attend) or additive, broadcast
/// to [.., L, S]; `is_causal`: query i attends keys 0..i (needs no mask); `scale` defaults to
/// 1 / sqrt(E).
///
/// Why not SDPA everywhere: on the CPU, SDPA with dropout takes its unfused math path, whose
/// dropout is torch's per-element draw under the generator's lock (on GPT-2 small at 1,024
/// tokens, about half of a training step on 2 cores). This runs the same steps with
/// ctrainer::dropout (the same distribution, another mask; models/dropout.h): one head at a time
/// in fp32 where fused_cpu_attention_applies() and a head has at least
/// kFusedAttentionMinScoresPerHead scores (models/fused_cpu_attention.h), else through
/// unfused_attention_with_dropout(); both keep the same elements for the same seed. A query row
/// that a boolean mask masks entirely attends every key uniformly there (as transformers' eager
/// attention), where SDPA gives zeros; such rows are padding, whose outputs no loss reads.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask, double dropout_p, bool training, bool is_causal,
                     std::optional<double> scale = std::nullopt);

/// attention() in training with dropout on any inputs, all heads at once: at::matmul, the masks,
/// at::softmax, ctrainer::dropout, at::matmul (differentiable twice; keeps the probabilities, the
/// mask and the dropped probabilities for the backward). `scale` is applied, not defaulted.
at::Tensor unfused_attention_with_dropout(const at::Tensor& q, const at::Tensor& k,
                                          const at::Tensor& v, const at::Tensor& mask,
                                          double dropout_p, bool is_causal, double scale);

}  // namespace ctrainer
