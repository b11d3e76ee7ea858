// core/parallel_for.h: every index of the range is visited exactly once, in chunks as
// at::parallel_for makes them; with OpenMP in the build and two threads allowed, the chunks run
// on two threads (the bug it fixes: at::parallel_for in our translation units ran every chunk on
// the calling thread); small ranges and nested calls stay on the calling thread; a chunk's
// exception reaches the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>

#include <ctrainer/core/parallel_for.h>

namespace ctrainer {
namespace parallel_for_test {

/// The threads that ran chunks of parallel_for(0, size, grain), and whether each index was
/// visited exactly once.
struct Visit {
  std::set<std::thread::id> threads;
  bool each_once = true;
};

Visit visit(int64_t size, int64_t grain) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(size));
  std::mutex mutex;
  Visit result;
  parallel_for(0, size, grain, [&](int64_t begin, int64_t end) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      result.threads.insert(std::this_thread::get_id());
    }
    for (int64_t i = begin; i < end; ++i) visits[static_cast<size_t>(i)]++;
  });
  for (const auto& count : visits) result.each_once = result.each_once && count.load() == 1;
  return result;
}

TEST(ParallelFor, VisitsEachIndexOnceOnTheThreadsTorchUses) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  const Visit large = visit(100000, 16);
  const Visit small = visit(10, 16);  // at most the grain: the calling thread alone
  at::set_num_threads(threads);
  EXPECT_TRUE(large.each_once);
  EXPECT_TRUE(small.each_once);
  EXPECT_EQ(small.threads, std::set<std::thread::id>{std::this_thread::get_id()});
  if (parallel_for_uses_threads())
    EXPECT_EQ(large.threads.size(), 2u);
  else
    GTEST_LOG_(INFO) << "this build has no OpenMP: parallel_for runs on the calling thread";
}

TEST(ParallelFor, NestedCallsRunInsideTheirChunk) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  std::atomic<int64_t> total{0};
  std::atomic<bool> nested_left_its_thread{false};
  parallel_for(0, 4, 0, [&](int64_t begin, int64_t end) {
    const auto outer = std::this_thread::get_id();
    for (int64_t i = begin; i < end; ++i)
      parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) {
        if (std::this_thread::get_id() != outer) nested_left_its_thread = true;
        total += e - b;
      });
  });
  at::set_num_threads(threads);
  EXPECT_EQ(total.load(), 4000);
  EXPECT_FALSE(nested_left_its_thread.load());
}

TEST(ParallelFor, AChunksExceptionReachesTheCaller) {
  EXPECT_THROW(parallel_for(0, 100000, 1,
                            [](int64_t begin, int64_t) {
                              if (begin == 0) throw std::runtime_error("chunk failed");
                            }),
               std::runtime_error);
  EXPECT_NO_THROW(parallel_for(5, 5, 1, [](int64_t, int64_t) { throw std::logic_error("empty"); }));
}

}  // namespace parallel_for_test
}  // namespace ctrainer
