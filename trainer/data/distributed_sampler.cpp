#include <ctrainer/trainer/data/distributed_sampler.h>

#include <numeric>
#include <string>

#include <ctrainer/core/errors.h>

namespace ctrainer {

int64_t distributed_num_samples(int64_t n, int64_t num_replicas, bool drop_last) {
  // torch: drop_last and uneven -> ceil((n - R) / R), which is floor(n / R).
  return drop_last ? n / num_replicas : (n + num_replicas - 1) / num_replicas;
}

std::vector<int64_t> shard_for_replica(std::vector<int64_t> order, int64_t num_replicas,
                                       int64_t rank, bool drop_last) {
  const int64_t n = static_cast<int64_t>(order.size());
  const int64_t total = distributed_num_samples(n, num_replicas, drop_last) * num_replicas;
  if (total > n) {
    // Repeat from the start (several times when the data is smaller than the padding).
    for (int64_t i = 0; static_cast<int64_t>(order.size()) < total; ++i)
      order.push_back(order[static_cast<size_t>(i % n)]);
  } else {
    order.resize(static_cast<size_t>(total));
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(total / num_replicas));
  for (int64_t i = rank; i < total; i += num_replicas)
    mine.push_back(order[static_cast<size_t>(i)]);
  return mine;
}

namespace {

void check_replica(const char* sampler, int64_t num_replicas, int64_t rank) {
  if (num_replicas < 1)
    throw ArgumentError(std::string(sampler) + ": num_replicas must be >= 1, got " +
                        std::to_string(num_replicas));
  if (rank < 0 || rank >= num_replicas)
    throw ArgumentError(std::string(sampler) + ": rank " + std::to_string(rank) +
                        " is outside [0, " + std::to_string(num_replicas) + ")");
}

}  // namespace

DistributedSampler::DistributedSampler(int64_t n, int64_t num_replicas, int64_t rank, bool shuffle,
                                       int64_t seed, bool drop_last)
    : n_(n),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  check_replica("DistributedSampler", num_replicas, rank);
}

int64_t DistributedSampler::size() const {
  return distributed_num_samples(n_, num_replicas_, drop_last_);
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order;
  if (shuffle_) {
    order = seeded_permutation(n_, seed_ + epoch);
  } else {
    order.resize(static_cast<size_t>(n_));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  if (n_ == 0) return {};
  return shard_for_replica(std::move(order), num_replicas_, rank_, drop_last_);
}

nlohmann::json DistributedSampler::details() const {
  return {{"num_replicas", num_replicas_}, {"rank", rank_}, {"drop_last", drop_last_}};
}

ShardedSequentialSampler::ShardedSequentialSampler(int64_t n, int64_t num_replicas, int64_t rank)
    : n_(n), num_replicas_(num_replicas), rank_(rank) {
  check_replica("ShardedSequentialSampler", num_replicas, rank);
}

int64_t ShardedSequentialSampler::size() const {
  return n_ > rank_ ? (n_ - rank_ + num_replicas_ - 1) / num_replicas_ : 0;
}

std::vector<int64_t> ShardedSequentialSampler::indices(int64_t /*epoch*/) const {
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(size()));
  for (int64_t i = rank_; i < n_; i += num_replicas_) mine.push_back(i);
  return mine;
}

nlohmann::json ShardedSequentialSampler::details() const {
  return {{"num_replicas", num_replicas_}, {"rank", rank_}};
}

}  // namespace ctrainer
