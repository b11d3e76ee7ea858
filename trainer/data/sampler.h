#pragma once
/// \file Samplers: the order in which a loader visits dataset indices in each epoch.
#include <cstdint>
#include <vector>

namespace ctrainer {

/// Produces the index order of one epoch. Orders depend only on (seed, epoch), never on global
/// RNG state, so they are reproducible and resumable.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// Number of indices per epoch.
  virtual int64_t size() const = 0;
  /// The indices of `epoch`, in visiting order.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
};

/// 0, 1, ..., n-1 every epoch (evaluation / prediction).
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_;
};

/// A random permutation per epoch from a private generator seeded with seed + epoch (the rule
/// of Accelerate's SeedableRandomSampler, which the HF Trainer uses).
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t n, int64_t seed) : n_(n), seed_(seed) {}
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t seed() const { return seed_; }

 private:
  int64_t n_;
  int64_t seed_;
};

}  // namespace ctrainer
