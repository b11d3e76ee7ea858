#include <ctrainer/trainer/data/length_grouped_sampler.h>

#include <algorithm>
#include <string>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/data/distributed_sampler.h>

namespace ctrainer {

std::vector<int64_t> length_grouped_indices(const std::vector<int64_t>& lengths, int64_t batch_size,
                                            const std::vector<int64_t>& order,
                                            std::optional<int64_t> mega_batch_mult) {
  const int64_t n = static_cast<int64_t>(order.size());
  int64_t mult = mega_batch_mult.value_or(std::min<int64_t>(n / (batch_size * 4), 50));
  if (mult < 1) mult = 1;  // tiny datasets
  const int64_t megabatch_size = mult * batch_size;
  std::vector<int64_t> out(order);
  auto by_length_desc = [&](int64_t a, int64_t b) {
    return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
  };
  int64_t longest_start = 0;  // mega-batch whose first element is the longest overall
  for (int64_t start = 0; start < n; start += megabatch_size) {
    auto first = out.begin() + start;
    auto last = out.begin() + std::min(n, start + megabatch_size);
    std::stable_sort(first, last, by_length_desc);  // Python's sorted(..., reverse=True)
    // torch.argmax picks the first maximum.
    if (lengths[static_cast<size_t>(*first)] >
        lengths[static_cast<size_t>(out[static_cast<size_t>(longest_start)])])
      longest_start = start;
  }
  if (n > 0) std::swap(out[0], out[static_cast<size_t>(longest_start)]);
  return out;
}

LengthGroupedSampler::LengthGroupedSampler(std::vector<int64_t> lengths, int64_t batch_size,
                                           int64_t seed, std::optional<int64_t> mega_batch_mult)
    : lengths_(std::move(lengths)),
      batch_size_(batch_size),
      seed_(seed),
      mega_batch_mult_(mega_batch_mult) {
  if (batch_size_ < 1)
    throw ArgumentError("LengthGroupedSampler: batch_size must be >= 1, got " +
                        std::to_string(batch_size_));
  for (int64_t length : lengths_)
    if (length < 0) throw ArgumentError("LengthGroupedSampler: lengths must be >= 0");
}

std::vector<int64_t> LengthGroupedSampler::indices(int64_t epoch) const {
  return length_grouped_indices(lengths_, batch_size_, seeded_permutation(size(), seed_ + epoch),
                                mega_batch_mult_);
}

DistributedLengthGroupedSampler::DistributedLengthGroupedSampler(std::vector<int64_t> lengths,
                                                                 int64_t batch_size,
                                                                 int64_t num_replicas, int64_t rank,
                                                                 int64_t seed, bool drop_last)
    : grouped_(std::move(lengths), batch_size, seed),
      num_replicas_(num_replicas),
      rank_(rank),
      drop_last_(drop_last) {
  if (num_replicas < 1 || rank < 0 || rank >= num_replicas)
    throw ArgumentError("DistributedLengthGroupedSampler: rank " + std::to_string(rank) + " of " +
                        std::to_string(num_replicas) + " replicas is invalid");
}

int64_t DistributedLengthGroupedSampler::size() const {
  return distributed_num_samples(grouped_.size(), num_replicas_, drop_last_);
}

std::vector<int64_t> DistributedLengthGroupedSampler::indices(int64_t epoch) const {
  if (grouped_.size() == 0) return {};
  return shard_for_replica(grouped_.indices(epoch), num_replicas_, rank_, drop_last_);
}

nlohmann::json DistributedLengthGroupedSampler::details() const {
  return {{"num_replicas", num_replicas_}, {"rank", rank_}, {"drop_last", drop_last_}};
}

}  // namespace ctrainer
