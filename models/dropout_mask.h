#pragma once
/// \file The counter-based keep mask of ctrainer::dropout (models/dropout.h), shared by the fused
/// CPU attention (models/fused_cpu_attention.h) so that both keep exactly the same elements of
/// the same tensor for the same seed.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ctrainer {

/// The keep mask of one dropout call: element `index` of the contiguous tensor is kept iff its
/// 32-bit draw is >= threshold (probability 1 - threshold / 2^32). Elements 2m and 2m+1 share
/// the 64-bit draw of counter m (the low and the high half), so the mask depends on the seed and
/// the element index alone, never on threads or partitioning.
struct DropoutMask {
  uint64_t seed = 0;
  uint32_t threshold = 0;

  /// A mask for probability `p` with a seed drawn from the default CPU generator, under its
  /// lock, as torch's samplers draw (so manual_seed, checkpointed RNG states and gradient
  /// checkpointing's RNG replay govern it).
  static DropoutMask draw(double p);

  /// p rounded to the 32-bit threshold.
  static uint32_t threshold_for(double p) {
    return static_cast<uint32_t>(std::min(std::llround(p * 4294967296.0), 4294967295LL));
  }

  /// SplitMix64's finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mix whose outputs for
  /// consecutive counters pass BigCrush.
  static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  /// The 64-bit draw of elements 2 * pair and 2 * pair + 1.
  uint64_t pair_bits(int64_t pair) const {
    return mix64(seed + static_cast<uint64_t>(pair) * 0x9E3779B97F4A7C15ULL);
  }
  bool keeps_low(uint64_t bits) const { return static_cast<uint32_t>(bits) >= threshold; }
  bool keeps_high(uint64_t bits) const { return static_cast<uint32_t>(bits >> 32) >= threshold; }

  /// Whether element `index` is kept.
  bool keeps(int64_t index) const {
    const uint64_t bits = pair_bits(index >> 1);
    return (index & 1) ? keeps_high(bits) : keeps_low(bits);
  }
};

}  // namespace ctrainer
