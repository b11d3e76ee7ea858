// The large-buffer cache (trainer/runtime/large_buffer_cache.h): which requests it serves, reuse
// within an eighth (or beyond when a new block would need an eviction), eviction that keeps live +
// cached at or below the peak of live blocks, the raw interface, release, a cache destroyed before
// its buffers, the process-wide install behind at::empty, and training that is bit-identical with
// and without it.
#include <gtest/gtest.h>

#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/runtime/cpu_runtime.h>
#include <ctrainer/trainer/runtime/large_buffer_cache.h>
#include <ctrainer/trainer/trainer.h>

#include "support/resident_memory.h"
#include "support/test_data.h"

namespace ctrainer {
namespace large_buffer_cache_test {

constexpr size_t kMiB = size_t{1} << 20;

TEST(LargeBufferCache, SmallRequestsGoToTheDefaultAllocator) {
  LargeBufferCache cache(4 * kMiB);
  {
    c10::DataPtr small = cache.allocate(4 * kMiB - 1);
    ASSERT_NE(small.get(), nullptr);
    EXPECT_NE(small.get_deleter(), cache.raw_deleter());
  }
  const LargeBufferCacheStats stats = cache.stats();
  EXPECT_EQ(stats.misses + stats.hits, 0);
  EXPECT_EQ(stats.peak_live_bytes, 0u);
}

TEST(LargeBufferCache, AFreedBlockIsHandedOutAgainForARequestWithinAnEighth) {
  LargeBufferCache cache(kMiB);
  void* first = nullptr;
  {
    c10::DataPtr block = cache.allocate(7 * kMiB);  // rounded to 8 MiB
    first = block.get();
    EXPECT_EQ(cache.stats().live_bytes, 8 * kMiB);
  }
  EXPECT_EQ(cache.stats().cached_bytes, 8 * kMiB);
  EXPECT_EQ(cache.stats().live_bytes, 0u);
  {
    c10::DataPtr again = cache.allocate(7 * kMiB + 5);  // rounds to 8 MiB: the same block
    EXPECT_EQ(again.get(), first);
    EXPECT_EQ(again.get_context(), again.get());  // raw_allocate and is_simple_data_ptr hold
  }
  const LargeBufferCacheStats stats = cache.stats();
  EXPECT_EQ(stats.misses, 1);
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.evictions, 0);
}

TEST(LargeBufferCache, ABlockMoreThanAnEighthLargerServesOnlyWhenANewBlockWouldNeedAnEviction) {
  LargeBufferCache cache(kMiB);
  cache.allocate(16 * kMiB);  // freed at once: cached, peak 16 MiB
  cache.release_cached();     // the peak stays 16 MiB
  cache.allocate(10 * kMiB);  // cached again: 10 MiB
  {
    // 10 MiB would waste more than an eighth of 4 MiB, and there is room under the peak for a
    // new block (10 cached + 4 new <= 16): a new block, the 10 MiB one stays cached.
    c10::DataPtr small = cache.allocate(4 * kMiB);
    LargeBufferCacheStats stats = cache.stats();
    EXPECT_EQ(stats.hits, 0);
    EXPECT_EQ(stats.misses, 3);
    EXPECT_EQ(stats.cached_bytes, 10 * kMiB);
    // 8 MiB more would not fit under the peak (4 live + 10 cached + 8 > 16) without evicting
    // the 10 MiB block: it is handed out instead (no eviction, no new pages), and live + cached
    // stays where it was.
    c10::DataPtr larger = cache.allocate(8 * kMiB);
    stats = cache.stats();
    EXPECT_EQ(stats.hits, 1);
    EXPECT_EQ(stats.misses, 3);
    EXPECT_EQ(stats.evictions, 1);  // release_cached's
    EXPECT_EQ(stats.cached_bytes, 0u);
    EXPECT_EQ(stats.live_bytes, 14 * kMiB);
    EXPECT_EQ(stats.peak_live_bytes, 16 * kMiB);
  }
  // No cached block fits 20 MiB: the cache is emptied to stay under max(peak, live + new).
  c10::DataPtr huge = cache.allocate(20 * kMiB);
  EXPECT_EQ(cache.stats().cached_bytes, 0u);
  EXPECT_EQ(cache.stats().evictions, 3);
}

// A random workload of live and freed blocks: every block keeps its contents while live (no
// block is handed out twice) and live + cached never exceeds the peak of live bytes.
TEST(LargeBufferCache, RandomWorkloadKeepsContentsAndStaysWithinThePeakOfLiveBlocks) {
  LargeBufferCache cache(kMiB);
  std::mt19937 random(7);
  struct Live {
    c10::DataPtr data;
    size_t bytes;
    unsigned char pattern;
  };
  std::vector<Live> live;
  size_t peak_seen = 0;
  for (int op = 0; op < 2000; ++op) {
    const bool allocate = live.empty() || (live.size() < 12 && random() % 2 == 0);
    if (allocate) {
      const size_t bytes = kMiB + random() % (24 * kMiB);
      const auto pattern = static_cast<unsigned char>(op);
      c10::DataPtr data = cache.allocate(bytes);
      std::memset(data.get(), pattern, bytes);
      live.push_back({std::move(data), bytes, pattern});
    } else {
      const size_t index = random() % live.size();
      const auto* bytes = static_cast<const unsigned char*>(live[index].data.get());
      for (size_t at : {size_t{0}, live[index].bytes / 2, live[index].bytes - 1})
        ASSERT_EQ(bytes[at], live[index].pattern) << "operation " << op;
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
    }
    const LargeBufferCacheStats stats = cache.stats();
    peak_seen = std::max(peak_seen, stats.live_bytes);
    ASSERT_LE(stats.live_bytes + stats.cached_bytes, peak_seen) << "operation " << op;
  }
  const LargeBufferCacheStats stats = cache.stats();
  EXPECT_GT(stats.hits, 500) << "misses " << stats.misses;
  EXPECT_EQ(stats.peak_live_bytes, peak_seen);
}

TEST(LargeBufferCache, RawAllocateAndDeallocateServeBothSizes) {
  LargeBufferCache cache(kMiB);
  void* small = cache.raw_allocate(1000);
  void* large = cache.raw_allocate(3 * kMiB);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  std::memset(small, 1, 1000);
  std::memset(large, 1, 3 * kMiB);
  cache.raw_deallocate(small);
  cache.raw_deallocate(large);
  EXPECT_EQ(cache.stats().cached_bytes, 4 * kMiB);
  EXPECT_EQ(cache.stats().live_bytes, 0u);
}

using testing::resident_bytes;

TEST(LargeBufferCache, ReleaseCachedGivesTheBlocksBackToTheSystem) {
  LargeBufferCache cache;
  constexpr size_t kBytes = 64 * kMiB;
  {
    c10::DataPtr block = cache.allocate(kBytes);
    std::memset(block.get(), 1, kBytes);
  }
  // glibc serves even a large request from free heap when it holds enough (earlier tests leave
  // some): trimming before and after counts only what release_cached() gave back.
  malloc_trim(0);
  const int64_t kept = resident_bytes();
  cache.release_cached();
  malloc_trim(0);
  const int64_t released = resident_bytes();
  EXPECT_EQ(cache.stats().cached_bytes, 0u);
  EXPECT_EQ(cache.stats().evictions, 1);
  EXPECT_GE(kept - released, static_cast<int64_t>(kBytes))
      << "kept " << kept << " B resident, " << released << " B after release_cached()";
}

TEST(LargeBufferCache, BuffersOutlivingTheirCacheAreFreedAsAllocated) {
  c10::DataPtr survivor;
  {
    LargeBufferCache cache(kMiB);
    survivor = cache.allocate(2 * kMiB);
    std::memset(survivor.get(), 1, 2 * kMiB);
  }
  survivor.clear();  // under ASan: no use of the destroyed cache, no leak, no double free
  SUCCEED();
}

TEST(LargeBufferCache, InstalledCacheServesAtEmptyAndReleaseFreedMemoryEmptiesIt) {
  at::Tensor before_install = at::empty({48 * static_cast<int64_t>(kMiB)}, at::kByte);
  if (!install_large_buffer_cache()) GTEST_SKIP() << "CTRAINER_MALLOC_DEFAULTS is set";
  LargeBufferCache* cache = installed_large_buffer_cache();
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(c10::GetCPUAllocator(), cache);
  EXPECT_TRUE(install_large_buffer_cache());  // once: a second call changes nothing
  EXPECT_EQ(c10::GetCPUAllocator(), cache);
  before_install = at::Tensor();  // allocated by the default allocator, freed by it

  const int64_t misses = cache->stats().misses;
  void* first = at::empty({40 * static_cast<int64_t>(kMiB)}, at::kByte).data_ptr();
  void* second = at::empty({40 * static_cast<int64_t>(kMiB)}, at::kByte).data_ptr();
  EXPECT_EQ(first, second);
  EXPECT_EQ(cache->stats().misses, misses + 1);
  EXPECT_GE(cache->stats().cached_bytes, 40 * kMiB);
  release_freed_memory();
  EXPECT_EQ(cache->stats().cached_bytes, 0u);
}

/// Records the cache's held bytes when the first step begins.
class CachedBytesAtFirstStep : public TrainerCallback {
 public:
  std::string name() const override { return "CachedBytesAtFirstStep"; }
  void on_step_begin(Args, TrainerState& state, TrainerControl&, Ctx) override {
    if (state.global_step == 0) bytes = installed_large_buffer_cache()->stats().cached_bytes;
  }
  std::optional<size_t> bytes;
};

TEST(LargeBufferCache, TrainingStartsWithTheBuffersOfLoadingGivenBack) {
  auto args = testing::quiet_args("train_start");
  args.max_steps = 1;
  args.per_device_train_batch_size = 8;
  auto recorder = std::make_shared<CachedBytesAtFirstStep>();
  Trainer trainer(
      std::make_shared<MLPClassifier>(8, 16, 2), args,
      {.train_dataset = testing::make_blobs_dataset(16, 8, 1), .callbacks = {recorder}});
  LargeBufferCache* cache = installed_large_buffer_cache();
  if (cache == nullptr) GTEST_SKIP() << "CTRAINER_MALLOC_DEFAULTS is set";
  at::empty({48 * static_cast<int64_t>(kMiB)}, at::kByte);  // loading's buffer, freed: kept
  ASSERT_GE(cache->stats().cached_bytes, 48 * kMiB);
  trainer.train();
  ASSERT_TRUE(recorder->bytes.has_value());
  EXPECT_EQ(*recorder->bytes, 0u);
}

/// Installs `allocator` as libtorch's CPU allocator for one scope.
class ScopedCpuAllocator {
 public:
  explicit ScopedCpuAllocator(c10::Allocator* allocator) : previous_(c10::GetCPUAllocator()) {
    c10::SetCPUAllocator(allocator, 0);
  }
  ~ScopedCpuAllocator() { c10::SetCPUAllocator(previous_, 0); }
  ScopedCpuAllocator(const ScopedCpuAllocator&) = delete;
  ScopedCpuAllocator& operator=(const ScopedCpuAllocator&) = delete;

 private:
  c10::Allocator* previous_;
};

struct TrainedParameters {
  std::vector<at::Tensor> initial, trained;
};

/// 6 steps of an MLP whose activations (512 x 2048 floats, 4 MiB) are large blocks for a cache
/// with a 1 MiB threshold, from the same initial parameters every call.
TrainedParameters train_wide_mlp(const std::string& name) {
  auto data = testing::make_blobs_dataset(512 * 6, 256, 3);
  auto args = testing::quiet_args(name);
  args.max_steps = 6;
  args.per_device_train_batch_size = 512;
  args.learning_rate = 1e-3;
  at::manual_seed(11);
  auto model = std::make_shared<MLPClassifier>(256, 2048, 2);
  TrainedParameters result;
  for (const auto& p : model->parameters()) result.initial.push_back(p.detach().clone());
  Trainer trainer(model, args, {.train_dataset = data});
  trainer.train();
  for (const auto& p : model->parameters()) result.trained.push_back(p.detach().clone());
  return result;
}

TEST(LargeBufferCache, TrainingIsBitIdenticalWithAndWithoutTheCache) {
  auto* cache = new LargeBufferCache(kMiB);  // leaked: parameters may outlive the test
  TrainedParameters cached;
  {
    ScopedCpuAllocator scope(cache);
    cached = train_wide_mlp("cached");
  }
  const LargeBufferCacheStats stats = cache->stats();
  EXPECT_GT(stats.hits, 20) << "the cache served " << stats.misses << " misses only";
  const TrainedParameters plain = train_wide_mlp("plain");
  ASSERT_EQ(cached.trained.size(), plain.trained.size());
  for (size_t i = 0; i < plain.trained.size(); ++i) {
    EXPECT_TRUE(at::equal(cached.initial[i], plain.initial[i])) << i;
    EXPECT_TRUE(at::equal(cached.trained[i], plain.trained[i])) << i;
    EXPECT_FALSE(at::equal(plain.initial[i], plain.trained[i])) << i;
  }
}

}  // namespace large_buffer_cache_test
}  // namespace ctrainer
