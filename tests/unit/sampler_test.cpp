// Samplers: sequential, seeded random (unchanged order), distributed (torch's padding /
// drop_last / rank striding), length-grouped (HF's mega-batch scheme) and their state.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/data/distributed_sampler.h>
#include <ctrainer/trainer/data/length_grouped_sampler.h>
#include <ctrainer/trainer/data/train_sampler.h>

#include "support/expect_error.h"

namespace ctrainer {
namespace sampler_test {

TEST(Samplers, RandomSamplerOrderIsTorchRandpermOfSeedPlusEpoch) {
  RandomSampler s(10, 40);
  EXPECT_EQ(s.indices(2), seeded_permutation(10, 42));
  // Golden: torch.randperm(10, generator=torch.Generator().manual_seed(42)) on CPU, as this
  // sampler produced before the samplers were extended (checkpoints depend on it).
  auto g = at::make_generator<at::CPUGeneratorImpl>(42);
  at::Tensor perm = at::randperm(10, g, at::TensorOptions().dtype(at::kLong));
  EXPECT_EQ(s.indices(2),
            std::vector<int64_t>(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + 10));
  EXPECT_EQ(SequentialSampler(4).indices(7), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(Samplers, ShardForReplicaPadsFromTheStartOrDropsTheTail) {
  const std::vector<int64_t> order{9, 8, 7, 6, 5, 4, 3};  // 7 items, 3 replicas
  // Padded to 9 with the first two: 9 8 7 6 5 4 3 9 8; rank r takes r, r+3, r+6.
  EXPECT_EQ(shard_for_replica(order, 3, 0, false), (std::vector<int64_t>{9, 6, 3}));
  EXPECT_EQ(shard_for_replica(order, 3, 1, false), (std::vector<int64_t>{8, 5, 9}));
  EXPECT_EQ(shard_for_replica(order, 3, 2, false), (std::vector<int64_t>{7, 4, 8}));
  // drop_last: cut to 6.
  EXPECT_EQ(shard_for_replica(order, 3, 2, true), (std::vector<int64_t>{7, 4}));
  // More padding than data: the order repeats several times (torch's general case).
  EXPECT_EQ(shard_for_replica({1, 2}, 5, 4, false), (std::vector<int64_t>{1}));
  EXPECT_EQ(shard_for_replica({1, 2}, 5, 3, false), (std::vector<int64_t>{2}));
  EXPECT_EQ(distributed_num_samples(7, 3, false), 3);
  EXPECT_EQ(distributed_num_samples(7, 3, true), 2);
  EXPECT_EQ(distributed_num_samples(2, 4, true), 0);
}

TEST(Samplers, DistributedSamplerPartitionsTheSharedPermutation) {
  const int64_t n = 23, world = 4;
  std::multiset<int64_t> all;
  for (int64_t rank = 0; rank < world; ++rank) {
    DistributedSampler s(n, world, rank, /*shuffle=*/true, /*seed=*/7);
    auto mine = s.indices(3);
    EXPECT_EQ(static_cast<int64_t>(mine.size()), s.size());
    EXPECT_EQ(s.size(), 6);
    EXPECT_EQ(mine, shard_for_replica(seeded_permutation(n, 10), world, rank, false));
    all.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(all.size(), 24u);                                        // 23 + 1 padding duplicate
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 23u);  // every example seen
  EXPECT_EQ(DistributedSampler(5, 2, 1, /*shuffle=*/false).indices(0),
            (std::vector<int64_t>{1, 3, 0}));
  testing::expect_error([] { DistributedSampler(5, 2, 2); }, {"rank 2", "[0, 2)"});
}

/// HF's get_length_grouped_indices, written out step by step for a given permutation.
std::vector<int64_t> hf_reference(const std::vector<int64_t>& lengths, int64_t batch_size,
                                  std::vector<int64_t> perm) {
  const int64_t n = static_cast<int64_t>(lengths.size());
  int64_t mult = std::max<int64_t>(1, std::min<int64_t>(n / (batch_size * 4), 50));
  std::vector<std::vector<int64_t>> megabatches;
  for (int64_t i = 0; i < n; i += mult * batch_size)
    megabatches.emplace_back(perm.begin() + i, perm.begin() + std::min(n, i + mult * batch_size));
  for (auto& mb : megabatches)
    std::stable_sort(mb.begin(), mb.end(),
                     [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  size_t max_idx = 0;
  for (size_t i = 0; i < megabatches.size(); ++i)
    if (lengths[megabatches[i][0]] > lengths[megabatches[max_idx][0]]) max_idx = i;
  std::swap(megabatches[0][0], megabatches[max_idx][0]);
  std::vector<int64_t> out;
  for (auto& mb : megabatches) out.insert(out.end(), mb.begin(), mb.end());
  return out;
}

TEST(Samplers, ShardedSequentialSamplerSplitsWithoutPaddingOrDropping) {
  // 7 rows over 3 ranks: rows r, r + 3, ...; the first 7 % 3 = 1 rank gets one row more.
  EXPECT_EQ(ShardedSequentialSampler(7, 3, 0).indices(0), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(ShardedSequentialSampler(7, 3, 1).indices(5), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(ShardedSequentialSampler(7, 3, 2).indices(0), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(ShardedSequentialSampler(7, 3, 0).size(), 3);
  EXPECT_EQ(ShardedSequentialSampler(7, 3, 2).size(), 2);
  // Fewer rows than ranks: the last ranks get nothing.
  EXPECT_EQ(ShardedSequentialSampler(2, 3, 2).size(), 0);
  EXPECT_TRUE(ShardedSequentialSampler(2, 3, 2).indices(0).empty());
  // Every row exactly once over all ranks, for many shapes.
  for (int64_t n : {0, 1, 5, 37, 64})
    for (int64_t world : {1, 2, 3, 4}) {
      std::multiset<int64_t> seen;
      for (int64_t rank = 0; rank < world; ++rank) {
        ShardedSequentialSampler s(n, world, rank);
        auto idx = s.indices(0);
        EXPECT_EQ(static_cast<int64_t>(idx.size()), s.size());
        seen.insert(idx.begin(), idx.end());
      }
      std::multiset<int64_t> all;
      for (int64_t i = 0; i < n; ++i) all.insert(i);
      EXPECT_EQ(seen, all) << n << " rows, " << world << " ranks";
    }
  testing::expect_error([] { ShardedSequentialSampler(5, 2, -1); }, {"rank -1", "[0, 2)"});
}

TEST(Samplers, LengthGroupedIndicesFollowHfMegaBatches) {
  // Hand-checked: batch 2, n=6 -> mult max(1, min(6/8, 50)) = 1, mega-batches of 2.
  const std::vector<int64_t> lengths{5, 1, 9, 3, 7, 2};
  const std::vector<int64_t> perm{0, 1, 2, 3, 4, 5};
  // [0,1] [2,3] [4,5] sorted desc by length: [0,1] [2,3] [4,5]; the longest (2, length 9)
  // heads mega-batch 1, so swap the heads of mega-batch 0 and 1.
  EXPECT_EQ(length_grouped_indices(lengths, 2, perm), (std::vector<int64_t>{2, 1, 0, 3, 4, 5}));
  // Stable for ties: equal lengths keep the permutation's order.
  EXPECT_EQ(length_grouped_indices({4, 4, 4, 4}, 1, {3, 1, 2, 0}, 4),
            (std::vector<int64_t>{3, 1, 2, 0}));

  std::vector<int64_t> many(1000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int64_t>((i * 37) % 101);
  LengthGroupedSampler sampler(many, 4, /*seed=*/3);
  auto order = sampler.indices(2);
  EXPECT_EQ(order, hf_reference(many, 4, seeded_permutation(1000, 5)));
  EXPECT_EQ(many[static_cast<size_t>(order[0])], 100);  // the longest comes first
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  // Grouping reduces padding: the summed per-batch maxima shrink against a random order.
  auto padded = [&](const std::vector<int64_t>& o) {
    int64_t total = 0;
    for (size_t b = 0; b < o.size(); b += 4) {
      int64_t longest = 0;
      for (size_t i = b; i < b + 4; ++i)
        longest = std::max(longest, many[static_cast<size_t>(o[i])]);
      total += longest;
    }
    return total;
  };
  EXPECT_LT(padded(order), padded(seeded_permutation(1000, 5)) * 3 / 4);
  EXPECT_NE(order, sampler.indices(3));
}

TEST(Samplers, DistributedLengthGroupedShardsTheGroupedOrder) {
  std::vector<int64_t> lengths(30);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = static_cast<int64_t>(i % 7);
  LengthGroupedSampler single(lengths, 2, 11);
  for (int64_t rank = 0; rank < 4; ++rank) {
    DistributedLengthGroupedSampler s(lengths, 2, 4, rank, 11);
    EXPECT_EQ(s.size(), 8);
    EXPECT_EQ(s.indices(1), shard_for_replica(single.indices(1), 4, rank, false));
    DistributedLengthGroupedSampler drop(lengths, 2, 4, rank, 11, /*drop_last=*/true);
    EXPECT_EQ(drop.size(), 7);
  }
}

TEST(Samplers, StateRoundTripsThroughJson) {
  SamplerState s{.sampler = "distributed",
                 .seed = 5,
                 .epoch = 2,
                 .position = 17,
                 .details = {{"rank", 1}, {"num_replicas", 2}}};
  EXPECT_EQ(SamplerState::from_json(s.to_json()), s);
  SamplerState seq{.sampler = "sequential", .epoch = 0, .position = 3};
  EXPECT_EQ(SamplerState::from_json(seq.to_json()), seq);
  EXPECT_TRUE(seq.to_json().at("seed").is_null());
  // The checkpoint format before samplers had names: {"seed", "epoch", "position"}.
  auto old = SamplerState::from_json({{"seed", 42}, {"epoch", 1}, {"position", 4}});
  EXPECT_EQ(old.seed, 42);
  EXPECT_EQ(old.position, 4);
  testing::expect_error(
      [] {
        SamplerState::from_json({{"epoch", "x"}, {"position", 1}});
      },
      {"sampler state", "epoch"});
  testing::expect_error(
      [] {
        SamplerState::from_json({{"epoch", 1}, {"position", -1}});
      },
      {">= 0"});
}

class NoLengths : public Dataset {
 public:
  int64_t size() const override { return 3; }
  Example get(int64_t) const override { return {}; }
};

class WithLengths : public NoLengths {
 public:
  std::optional<std::vector<int64_t>> lengths() const override {
    return std::vector<int64_t>{3, 1, 2};
  }
};

TEST(Samplers, TrainSamplerChoice) {
  EXPECT_EQ(make_train_sampler(NoLengths(), {})->name(), "random");
  EXPECT_EQ(make_train_sampler(NoLengths(), {.num_replicas = 2, .rank = 1})->name(), "distributed");
  EXPECT_EQ(make_train_sampler(WithLengths(), {.strategy = TrainSamplingStrategy::kGroupByLength})
                ->name(),
            "length_grouped");
  EXPECT_EQ(make_train_sampler(WithLengths(), {.strategy = TrainSamplingStrategy::kGroupByLength,
                                               .num_replicas = 2})
                ->name(),
            "distributed_length_grouped");
  testing::expect_error(
      [] { make_train_sampler(NoLengths(), {.strategy = TrainSamplingStrategy::kGroupByLength}); },
      {"--group_by_length", "lengths()"});
}

TEST(Samplers, SequentialTrainSamplingKeepsDatasetOrderEveryEpoch) {
  // --train_sampling_strategy sequential (HF's SequentialSampler): no shuffle in any epoch.
  const auto one =
      make_train_sampler(NoLengths(), {.strategy = TrainSamplingStrategy::kSequential});
  EXPECT_EQ(one->name(), "sequential");
  EXPECT_EQ(one->indices(0), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(one->indices(5), (std::vector<int64_t>{0, 1, 2}));
  // Several processes: torch's DistributedSampler without shuffle (padded to equal shares).
  const auto rank1 = make_train_sampler(
      NoLengths(), {.strategy = TrainSamplingStrategy::kSequential, .num_replicas = 2, .rank = 1});
  EXPECT_EQ(rank1->name(), "distributed");
  EXPECT_EQ(rank1->indices(0), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(rank1->indices(3), (std::vector<int64_t>{1, 0}));
}

}  // namespace sampler_test
}  // namespace ctrainer
