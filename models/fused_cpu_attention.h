#pragma once
/// \file Attention with dropout in training on the CPU (fp32), each head whole on one intra-op
/// thread: the products through oneDNN, the scores never stored, the dropout mask kept as bits.
///
/// Why: the unfused path (at::matmul, softmax, ctrainer::dropout, at::matmul over all heads at
/// once) ran GPT-2 small's attention products on MKL's AVX2 kernels at 70-150 GFLOP/s on the
/// AMD build machine, streamed each [batch, heads, L, S] tensor through memory several times,
/// and kept three of them per layer for the backward (the probabilities, the one-byte mask and
/// the dropped probabilities: 108 MiB per layer at 12 heads × 1024 tokens). Here each head's
/// L × S scores live only while that head is computed (4 MiB at 1024 tokens, within the
/// last-level cache), the products run at oneDNN's 250-410 GFLOP/s, and the backward recomputes
/// the head's scores from q and k (one extra q kᵀ product per head, flash attention's trade)
/// instead of keeping them: what the layer keeps is the mask, one bit per probability.
/// With a causal mask alone, a head runs in blocks of rows that skip the columns above the
/// diagonal (kCausalRowsPerBlock). The heads are spread over the intra-op threads, one head per
/// thread, rather than each head's small products split over all of them: `ctrainer-bench
/// attention_kernel` on the 2-core Zen 4 host, medians of 5 alternating runs, took GPT-2 small's
/// layer (1 × 12 × 1024 × 64, causal) from 85 to 70 ms and the 6x512 model's (8 × 8 × 256 × 64)
/// from 48 to 36 ms, forward and backward, with this and the 128-row blocks.
#include <ATen/ATen.h>

namespace ctrainer {

/// The fewest scores per head (L × S) for which attention() takes the fused path. Each head costs
/// a dozen operator calls and seven oneDNN products whose set-up does not shrink with the head,
/// so small heads are faster all at once: `ctrainer-bench attention_kernel`
/// (benchmarks/results/attention_kernel.json) has the fused path ahead from 256 × 256 scores per
/// head on and behind at BERT-base's 128 × 128.
constexpr int64_t kFusedAttentionMinScoresPerHead = int64_t{256} * 256;

/// Rows per block of a head with a causal mask. A block of rows [r, r + n) computes its scores,
/// products and gradients only against the columns [0, r + n) that it can see, so at L rows a
/// head computes about (1 + n / L) / 2 of the L × L scores instead of all of them (flash
/// attention's skipping of the blocks above the diagonal); smaller blocks skip more but run
/// smaller products (the key and value gradients' inner dimension is n). At 128 rows a block's
/// scores at 1024 keys (512 KiB of fp32) stay in a Zen 4 core's 1 MiB L2 cache, where 256 rows'
/// did not, and the causal head computes 56 % of its scores instead of 62.5 %.
constexpr int64_t kCausalRowsPerBlock = 128;

/// Whether fused_cpu_attention serves these inputs: q [B, H, L, E], k [B, H, S, E] and
/// v [B, H, S, Ev], fp32 strided CPU tensors with no zero-sized dimension; CPU autocast off and
/// linear() running on oneDNN (so CTRAINER_CPU_LINEAR=aten keeps the unfused path too); `mask`
/// undefined, or a bool or fp32 tensor of at most 4 dimensions broadcastable to [B, H, L, S]
/// that needs no gradient (T5's learned position bias does: it takes the unfused path).
bool fused_cpu_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                 const at::Tensor& mask);

/// What ctrainer::attention computes in training with dropout (models/attention.h), for inputs
/// that fused_cpu_attention_applies() accepts: softmax(q kᵀ · scale, the causal future at -inf,
/// then a boolean mask's blocked scores at the lowest float or an additive mask added) with
/// ctrainer::dropout's mask (the same seed draw and the same kept elements as dropout() on the
/// contiguous [B, H, L, S] probabilities), times v. Differentiable in q, k and v; its backward is
/// not differentiable again (double backward needs the unfused path). The result is
/// [B, H, L, Ev] laid out as [B, L, H, Ev], so merging the heads back is a view.
at::Tensor fused_cpu_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& mask, double dropout_p, bool is_causal,
                               double scale);

}  // namespace ctrainer
