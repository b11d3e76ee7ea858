#include <ctrainer/models/attention_rows.h>

#include <algorithm>
#include <cstring>

#include <ctrainer/core/parallel_for.h>

// Clones for AVX-512 (x86-64-v4) and AVX2 (x86-64-v3) beside the baseline, chosen by the CPU at
// load time; the loops below are written so that GCC vectorizes them there.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CTRAINER_ROW_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CTRAINER_ROW_CLONES
#endif

namespace ctrainer::attention_rows {
namespace {

constexpr int64_t kRowGrain = 8;  // rows per parallel task (a row is one to a few KiB)
constexpr int64_t kBlock = 64;    // elements whose keep flags are drawn at once (8 bit bytes)
constexpr int64_t kLanes = 16;    // partial sums of the softmax backward's row term

/// Byte b as eight floats: 1 where its bit is set, else 0 (unpacking keep bits by loads, which
/// vectorize, instead of shifts per element).
struct BitsAsFloats {
  float ones[256][8];
  BitsAsFloats() {
    for (int byte = 0; byte < 256; ++byte)
      for (int bit = 0; bit < 8; ++bit) ones[byte][bit] = (byte >> bit) & 1 ? 1.0f : 0.0f;
  }
};
const BitsAsFloats kBitsAsFloats;

CTRAINER_ROW_CLONES
void drop_row(float* row, uint8_t* row_bits, int64_t cols, DropoutMask mask, int64_t base,
              float keep_scale) {
  uint8_t kept[kBlock];
  for (int64_t start = 0; start < cols; start += kBlock) {
    const int64_t count = std::min(kBlock, cols - start);
    const int64_t first = base + start;
    if ((first & 1) == 0) {
      // Element 2m + first keeps by the low half of pair (first / 2 + m)'s draw, 2m + 1 by
      // the high half: the same draws as ctrainer::dropout's.
      const int64_t first_pair = first >> 1;
      for (int64_t m = 0; m < count / 2; ++m) {
        const uint64_t bits = mask.pair_bits(first_pair + m);
        kept[2 * m] = static_cast<uint32_t>(bits) >= mask.threshold;
        kept[2 * m + 1] = static_cast<uint32_t>(bits >> 32) >= mask.threshold;
      }
      if (count & 1) kept[count - 1] = mask.keeps(first + count - 1);
    } else {
      for (int64_t j = 0; j < count; ++j) kept[j] = mask.keeps(first + j);
    }
    float* values = row + start;
    for (int64_t j = 0; j < count; ++j) values[j] = kept[j] ? values[j] * keep_scale : 0.0f;
    uint8_t* bytes = row_bits + start / 8;
    for (int64_t byte = 0; byte < (count + 7) / 8; ++byte) {
      uint8_t packed = 0;
      for (int64_t bit = 0; bit < 8 && 8 * byte + bit < count; ++bit)
        packed |= static_cast<uint8_t>(kept[8 * byte + bit] << bit);
      bytes[byte] = packed;
    }
  }
}

CTRAINER_ROW_CLONES
void backward_row(const float* p, const uint8_t* row_bits, float* dropped, float* grad,
                  int64_t cols, float keep_scale) {
  float factor[kBlock];
  float partial[kLanes] = {};
  for (int64_t start = 0; start < cols; start += kBlock) {
    const int64_t count = std::min(kBlock, cols - start);
    const uint8_t* bytes = row_bits + start / 8;
    for (int64_t byte = 0; byte < (count + 7) / 8; ++byte)
      std::memcpy(factor + 8 * byte, kBitsAsFloats.ones[bytes[byte]], sizeof(float) * 8);
    for (int64_t j = 0; j < count; ++j) factor[j] *= keep_scale;
    const float* p_block = p + start;
    float* d_block = dropped + start;
    float* g_block = grad + start;
    for (int64_t j = 0; j < count; ++j) {
      d_block[j] = p_block[j] * factor[j];
      g_block[j] *= factor[j];
    }
    int64_t j = 0;
    for (; j + kLanes <= count; j += kLanes)
      for (int64_t lane = 0; lane < kLanes; ++lane)
        partial[lane] += p_block[j + lane] * g_block[j + lane];
    for (; j < count; ++j) partial[j % kLanes] += p_block[j] * g_block[j];
  }
  float weighted = 0.0f;  // Σ_j p_j dp_j
  for (int64_t lane = 0; lane < kLanes; ++lane) weighted += partial[lane];
  for (int64_t j = 0; j < cols; ++j) grad[j] = p[j] * (grad[j] - weighted);
}

}  // namespace

void drop(float* probs, uint8_t* kept_bits, int64_t rows, int64_t cols, int64_t row_length,
          const DropoutMask& mask, int64_t first_index, float keep_scale) {
  const int64_t row_bytes = kept_bytes_per_row(row_length);
  parallel_for(0, rows, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      drop_row(probs + i * cols, kept_bits + i * row_bytes, cols, mask,
               first_index + i * row_length, keep_scale);
  });
}

void dropout_softmax_backward(const float* probs, const uint8_t* kept_bits, float* dropped,
                              float* grad, int64_t rows, int64_t cols, int64_t row_length,
                              float keep_scale) {
  const int64_t row_bytes = kept_bytes_per_row(row_length);
  parallel_for(0, rows, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      backward_row(probs + i * cols, kept_bits + i * row_bytes, dropped + i * cols, grad + i * cols,
                   cols, keep_scale);
  });
}

}  // namespace ctrainer::attention_rows
