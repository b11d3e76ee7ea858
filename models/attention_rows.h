#pragma once
/// \file The element-wise loops of fused_cpu_attention (models/fused_cpu_attention.h) over one
/// head's L × S probabilities: dropping them with ctrainer::dropout's mask in the forward, and the
/// dropout and softmax backward in the backward. Torch-free, so the file compiles on its own
/// with per-function instruction sets: AVX-512 and AVX2 clones beside the baseline, picked at
/// load time (GCC's target_clones), as the 64-bit multiplies of the mask hash and the masked
/// products vectorize only there.
#include <cstdint>

#include <ctrainer/models/dropout_mask.h>

namespace ctrainer::attention_rows {

/// Bytes of one row's keep bits: bit j % 8 of byte j / 8 is set iff element j was kept.
inline int64_t kept_bytes_per_row(int64_t cols) {
  return (cols + 7) / 8;
}

/// probs (rows × cols, contiguous) becomes probs × keep_scale where `mask` keeps the element and
/// 0 elsewhere. The rows are the first `cols` elements of rows of the head's full row_length
/// (≥ cols) scores, as a causal row block computes them: element (i, j) is element
/// first_index + i * row_length + j of the mask (the index in the contiguous [B, H, L, S]
/// tensor), and its keep bit goes to row i of kept_bits, whose rows are
/// kept_bytes_per_row(row_length) apart (bytes after those holding the first cols bits are left
/// as they are).
/// Rows are split over libtorch's threads.
void drop(float* probs, uint8_t* kept_bits, int64_t rows, int64_t cols, int64_t row_length,
          const DropoutMask& mask, int64_t first_index, float keep_scale);

/// The backward of dropped = dropout(softmax(scores)) for one head: with p the softmax's
/// probabilities and `grad` holding d(dropped) on entry, writes the dropped probabilities
/// (p × keep_scale where kept, else 0) into `dropped` and leaves d(scores) =
/// p ⊙ (dp − Σ_j p_j dp_j) in `grad`, where dp = d(dropped) × keep_scale where kept, else 0.
/// probs, dropped and grad are rows × cols, contiguous; kept_bits' rows are
/// kept_bytes_per_row(row_length) apart, as drop() wrote them.
void dropout_softmax_backward(const float* probs, const uint8_t* kept_bits, float* dropped,
                              float* grad, int64_t rows, int64_t cols, int64_t row_length,
                              float keep_scale);

}  // namespace ctrainer::attention_rows
