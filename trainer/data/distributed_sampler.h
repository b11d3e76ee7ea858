#pragma once
/// \file DistributedSampler: each process of a data-parallel job takes its own share of every
/// epoch's order (torch.utils.data.DistributedSampler semantics).
#include <cstdint>
#include <vector>

#include <ctrainer/trainer/data/sampler.h>

namespace ctrainer {

/// Number of indices each replica gets from `n`: ceil(n / num_replicas), or floor with
/// drop_last (torch's num_samples).
int64_t distributed_num_samples(int64_t n, int64_t num_replicas, bool drop_last);

/// Rank `rank`'s share of `order` (torch's rule): without drop_last the order is padded by
/// repeating it from its start until it divides evenly, with drop_last its tail is cut; then
/// the replica takes order[rank], order[rank + num_replicas], ...
std::vector<int64_t> shard_for_replica(std::vector<int64_t> order, int64_t num_replicas,
                                       int64_t rank, bool drop_last);

/// torch.utils.data.DistributedSampler: with shuffle, the permutation of a generator seeded
/// with seed + epoch (the same on every rank), else 0..n-1; then shard_for_replica.
class DistributedSampler : public Sampler {
 public:
  /// Throws ArgumentError unless num_replicas >= 1 and 0 <= rank < num_replicas.
  DistributedSampler(int64_t n, int64_t num_replicas, int64_t rank, bool shuffle = true,
                     int64_t seed = 0, bool drop_last = false);
  int64_t size() const override;
  std::vector<int64_t> indices(int64_t epoch) const override;
  std::string name() const override { return "distributed"; }
  std::optional<int64_t> seed() const override {
    return shuffle_ ? std::optional<int64_t>(seed_) : std::nullopt;
  }
  nlohmann::json details() const override;

 private:
  int64_t n_, num_replicas_, rank_;
  bool shuffle_;
  int64_t seed_;
  bool drop_last_;
};

/// Evaluation's share of a data-parallel job: rank r takes rows r, r + W, r + 2W, ... of 0..n-1,
/// without padding, so the first n % W ranks get one row more (accelerate's even_batches=False).
/// Nothing is evaluated twice, so losses and metrics gathered from all ranks are the
/// one-process ones exactly; a rank may run one batch fewer, which is fine while evaluation
/// steps hold no collectives (DDP's do not).
class ShardedSequentialSampler : public Sampler {
 public:
  /// Throws ArgumentError unless num_replicas >= 1 and 0 <= rank < num_replicas.
  ShardedSequentialSampler(int64_t n, int64_t num_replicas, int64_t rank);
  int64_t size() const override;
  std::vector<int64_t> indices(int64_t epoch) const override;
  std::string name() const override { return "sharded_sequential"; }
  nlohmann::json details() const override;

 private:
  int64_t n_, num_replicas_, rank_;
};

}  // namespace ctrainer
