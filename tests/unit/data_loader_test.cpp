// BatchStream: batches prefetched by worker threads come in index order and equal
// DataLoader::batch for any worker count; worker errors reach the caller with context;
// prefetching is bounded; a stream destroyed mid-epoch stops promptly.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/data/batch_stream.h>
#include <ctrainer/trainer/data/padding_collator.h>

namespace ctrainer {
namespace data_loader_test {

/// Variable-length examples (length 1 + i % 5) without a stacked fast path; counts get() calls
/// and can fail on one index.
class CountingDataset : public Dataset {
 public:
  explicit CountingDataset(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override {
    gets_ += 1;
    if (i == fail_at_) throw ArgumentError("example " + std::to_string(i) + " is broken");
    const int64_t len = 1 + i % 5;
    return Example{{"input_ids", at::full({len}, i, at::kLong)},
                   {"attention_mask", at::ones({len}, at::kLong)},
                   {"labels", at::scalar_tensor(i % 2, at::kLong)}};
  }
  int64_t gets() const { return gets_.load(); }

 private:
  int64_t n_, fail_at_;
  mutable std::atomic<int64_t> gets_{0};
};

DataLoader make_loader(std::shared_ptr<Dataset> ds, int64_t workers, int64_t batch_size = 4,
                       int64_t prefetch = 2) {
  return DataLoader(ds, std::make_shared<RandomSampler>(ds->size(), 3),
                    {.batch_size = batch_size, .num_workers = workers, .prefetch_factor = prefetch},
                    std::make_shared<DataCollatorWithPadding>());
}

void expect_equal(const Batch& a, const Batch& b) {
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& key : a.keys()) EXPECT_TRUE(a.at(key).equal(b.at(key))) << key;
}

TEST(BatchStream, SameBatchesInIndexOrderForAnyWorkerCount) {
  auto ds = std::make_shared<CountingDataset>(37);
  DataLoader reference = make_loader(ds, 0);
  reference.set_epoch(2);
  const int64_t n = reference.num_batches();
  ASSERT_EQ(n, 10);
  for (int64_t workers : {0, 1, 3}) {
    for (int64_t first : {0, 4}) {
      SCOPED_TRACE("workers " + std::to_string(workers) + " first " + std::to_string(first));
      DataLoader loader = make_loader(ds, workers);
      loader.set_epoch(2);
      BatchStream stream(loader, first, n);
      for (int64_t k = first; k < n; ++k) {
        EXPECT_EQ(stream.next_index(), k);
        expect_equal(stream.next(), reference.batch(k));
      }
      EXPECT_TRUE(stream.done());
      EXPECT_THROW(stream.next(), std::out_of_range);
    }
  }
}

TEST(BatchStream, KeepsTheOrderItWasOpenedWith) {
  auto ds = std::make_shared<CountingDataset>(12);
  DataLoader loader = make_loader(ds, 2);
  const Batch epoch0_batch1 = loader.batch(1);
  BatchStream stream(loader, 0, loader.num_batches());
  loader.set_epoch(1);  // a later epoch does not change an open stream
  stream.next();
  expect_equal(stream.next(), epoch0_batch1);
}

TEST(BatchStream, WorkerErrorReachesTheCallerWithContext) {
  for (int64_t workers : {0, 2}) {
    SCOPED_TRACE("workers " + std::to_string(workers));
    auto ds = std::make_shared<CountingDataset>(20, /*fail_at=*/13);
    DataLoader loader = make_loader(ds, workers);
    loader.set_epoch(1);
    const auto order = *loader.epoch_order();
    const int64_t bad_batch = (std::find(order.begin(), order.end(), 13) - order.begin()) / 4;
    BatchStream stream(loader, 0, loader.num_batches());
    for (int64_t k = 0; k < bad_batch; ++k) stream.next();
    for (int attempt = 0; attempt < 2; ++attempt) {  // the error stays: no hang on retry
      try {
        stream.next();
        ADD_FAILURE() << "expected a DataLoaderError";
      } catch (const DataLoaderError& e) {
        // The loader names the example (its index in the dataset) whatever the dataset says.
        EXPECT_EQ(std::string(e.what()), "while loading batch " + std::to_string(bad_batch) +
                                             " of epoch 1: dataset example 13: example 13 is "
                                             "broken");
        try {
          std::rethrow_if_nested(e);
          ADD_FAILURE() << "no nested exception";
        } catch (const std::runtime_error& named) {
          EXPECT_STREQ(named.what(), "dataset example 13: example 13 is broken");
          try {
            std::rethrow_if_nested(named);
            ADD_FAILURE() << "the dataset's own exception is not nested";
          } catch (const ArgumentError& inner) {
            EXPECT_STREQ(inner.what(), "example 13 is broken");
          }
        }
      }
    }
  }
}

/// Slow examples, so that workers are busy when the stream is destroyed.
class SlowDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Example get(int64_t i) const override {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return CountingDataset::get(i);
  }
};

TEST(BatchStream, DestroyingMidEpochStopsPromptly) {
  auto ds = std::make_shared<SlowDataset>(400);
  DataLoader loader = make_loader(ds, 3, /*batch_size=*/2);
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < 50; ++round) {
    BatchStream stream(loader, round % 7, loader.num_batches());
    for (int k = 0; k < round % 3; ++k) stream.next();
  }
  // 50 streams, each stopping after at most one in-flight batch per worker (~0.4 ms each),
  // not after the 200 batches of an epoch (~40 ms each): far below 2 s even on a busy machine.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_LT(ds->gets(), 50 * (2 + 3 * 2 + 3) * 2);  // never ran ahead unboundedly
}

TEST(BatchStream, PrefetchIsBoundedByWorkersTimesPrefetchFactor) {
  auto ds = std::make_shared<CountingDataset>(100);
  DataLoader loader = make_loader(ds, /*workers=*/2, /*batch_size=*/1, /*prefetch=*/3);
  BatchStream stream(loader, 0, loader.num_batches());
  for (int k = 0; k < 5; ++k) stream.next();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the workers run ahead
  // 5 consumed + at most 2 workers x 3 batches ahead.
  EXPECT_LE(ds->gets(), 5 + 6);
  EXPECT_GE(ds->gets(), 5);
}

TEST(BatchStream, RejectsRangesOutsideTheEpoch) {
  auto ds = std::make_shared<CountingDataset>(8);
  DataLoader loader = make_loader(ds, 1);
  EXPECT_THROW(BatchStream(loader, 0, 3), std::out_of_range);
  EXPECT_THROW(BatchStream(loader, 2, 1), std::out_of_range);
  BatchStream empty(loader, 2, 2);
  EXPECT_TRUE(empty.done());
  EXPECT_THROW(DataLoader(ds, std::make_shared<SequentialSampler>(8), {.num_workers = -1}),
               ArgumentError);
  EXPECT_THROW(DataLoader(ds, std::make_shared<SequentialSampler>(8), {.prefetch_factor = 0}),
               ArgumentError);
}

TEST(BatchStream, LoaderStateNamesTheSampler) {
  auto ds = std::make_shared<CountingDataset>(8);
  DataLoader loader = make_loader(ds, 0);
  loader.set_epoch(3);
  SamplerState s = loader.state(1);
  EXPECT_EQ(s.sampler, "random");
  EXPECT_EQ(s.seed, 3);
  EXPECT_EQ(s.epoch, 3);
  EXPECT_EQ(s.position, 1);
}

}  // namespace data_loader_test
}  // namespace ctrainer
