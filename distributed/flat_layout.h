#pragma once
/// \file FlatLayout: how a sharded strategy lays parameters out. A segment's parameters sit back
/// to back in one flat buffer, padded at the end to a multiple of the world size; rank r owns the
/// elements [r * shard_numel, (r + 1) * shard_numel). Reduce-scatter and all-gather then move
/// equal chunks, and a parameter's place in the unpadded buffer does not depend on the world
/// size (what lets a sharded checkpoint be read back at another world size).
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace ctrainer {

/// One parameter's place in a segment.
struct FlatMember {
  std::string name;      ///< as named_parameters() spells it
  at::Tensor parameter;  ///< the model's parameter
  int64_t offset = 0;    ///< first element in the segment's flat buffer
  int64_t numel = 0;
};

/// The part of a member one rank owns: elements [begin, end) of the flattened parameter, stored
/// at `shard_offset` in that rank's shard.
struct OwnedSlice {
  std::size_t member = 0;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t shard_offset = 0;
  int64_t numel() const { return end - begin; }
};

/// The members of a segment and how the world shares them.
struct FlatLayout {
  std::vector<FlatMember> members;
  int64_t numel = 0;        ///< sum of the members' sizes (unpadded)
  int64_t shard_numel = 0;  ///< ceil(numel / world_size)
  int64_t world_size = 1;

  /// Lays `members` (name and parameter set) out in the given order for `world_size` ranks.
  static FlatLayout build(std::vector<FlatMember> members, int64_t world_size);
  int64_t padded_numel() const { return shard_numel * world_size; }
  /// The slices of members that `rank` owns, in member order (members entirely outside the
  /// rank's range are left out; the padding belongs to nobody).
  std::vector<OwnedSlice> owned_slices(int64_t rank) const;
};

/// Stage 1/2 buckets over `parameters` (trainable, in registration order): filled in reverse
/// order, as backward produces gradients, with at most `bucket_elements` elements each (a larger
/// parameter gets a bucket of its own); a new bucket also starts where dtype or device change.
/// Returns the parameter indices of each bucket, in bucket order.
std::vector<std::vector<std::size_t>> bucket_by_size(const std::vector<at::Tensor>& parameters,
                                                     int64_t bucket_elements);

}  // namespace ctrainer
