#pragma once
/// \file Sortish sampling (Seq2SeqTrainingArguments --sortish_sampler): batches of examples of
/// similar length in a random batch order, the batch holding the longest example first.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/trainer/data/sampler.h>

namespace ctrainer {

/// The order of the SortishSampler of transformers' seq2seq examples (from fastai), with its two
/// random draws given: `order` is a permutation of the examples, cut into chunks of 50 *
/// batch_size, each sorted by length, longest first (stable); the result is cut into batches of
/// batch_size; the batch whose first example is the longest goes first, swapped with the first
/// batch; the other batches follow in the order `batch_order` (a permutation of 0 .. number of
/// batches - 2) gives them.
std::vector<int64_t> sortish_indices(const std::vector<int64_t>& lengths, int64_t batch_size,
                                     const std::vector<int64_t>& order,
                                     const std::vector<int64_t>& batch_order);

/// SortishSampler: sortish_indices with both draws from one generator seeded with seed + epoch
/// (the examples' permutation, then the batches'), the same on every rank; with num_replicas > 1
/// each rank takes its share of that order as DistributedSampler shards (rank, rank +
/// num_replicas, ...), so that every rank's batches are sortish too. `batch_size` is the
/// per-device batch size.
class SortishSampler : public Sampler {
 public:
  /// Throws ArgumentError for batch_size < 1, a negative length or an invalid rank.
  SortishSampler(std::vector<int64_t> lengths, int64_t batch_size, int64_t seed,
                 int64_t num_replicas = 1, int64_t rank = 0, bool drop_last = false);
  int64_t size() const override;
  std::vector<int64_t> indices(int64_t epoch) const override;
  std::string name() const override { return "sortish"; }
  std::optional<int64_t> seed() const override { return seed_; }
  nlohmann::json details() const override;

 private:
  std::vector<int64_t> lengths_;
  int64_t batch_size_, seed_, num_replicas_, rank_;
  bool drop_last_;
};

}  // namespace ctrainer
