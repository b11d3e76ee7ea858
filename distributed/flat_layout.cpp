#include <ctrainer/distributed/flat_layout.h>

#include <algorithm>
#include <stdexcept>

namespace ctrainer {

FlatLayout FlatLayout::build(std::vector<FlatMember> members, int64_t world_size) {
  if (world_size < 1) throw std::invalid_argument("FlatLayout: world_size must be positive");
  FlatLayout layout;
  layout.world_size = world_size;
  for (auto& member : members) {
    member.offset = layout.numel;
    member.numel = member.parameter.numel();
    layout.numel += member.numel;
  }
  layout.members = std::move(members);
  layout.shard_numel = (layout.numel + world_size - 1) / world_size;
  return layout;
}

std::vector<OwnedSlice> FlatLayout::owned_slices(int64_t rank) const {
  const int64_t first = rank * shard_numel;
  const int64_t last = first + shard_numel;
  std::vector<OwnedSlice> slices;
  for (std::size_t m = 0; m < members.size(); ++m) {
    const int64_t begin = std::max(first, members[m].offset);
    const int64_t end = std::min(last, members[m].offset + members[m].numel);
    if (begin >= end) continue;
    slices.push_back({m, begin - members[m].offset, end - members[m].offset, begin - first});
  }
  return slices;
}

std::vector<std::vector<std::size_t>> bucket_by_size(const std::vector<at::Tensor>& parameters,
                                                     int64_t bucket_elements) {
  std::vector<std::vector<std::size_t>> buckets;
  int64_t filled = 0;
  for (std::size_t k = parameters.size(); k-- > 0;) {
    const at::Tensor& p = parameters[k];
    bool fresh = buckets.empty() || filled + p.numel() > bucket_elements;
    if (!fresh) {
      const at::Tensor& first = parameters[buckets.back().front()];
      fresh = first.scalar_type() != p.scalar_type() || first.device() != p.device();
    }
    if (fresh) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(k);
    filled += p.numel();
  }
  return buckets;
}

}  // namespace ctrainer
