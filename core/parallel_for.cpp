#include <ctrainer/core/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <exception>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace ctrainer {

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& body) {
  if (begin >= end) return;
#ifdef _OPENMP
  const int64_t size = end - begin;
  if (size > std::max<int64_t>(grain, 1) && !omp_in_parallel() && omp_get_max_threads() > 1) {
    std::atomic_flag failed = ATOMIC_FLAG_INIT;
    std::exception_ptr error;
#pragma omp parallel
    {
      // As ATen's invoke_parallel: no num_threads clause (GOMP's thread pool, pytorch#32008),
      // the chunks sized by the grain and the team.
      int64_t threads = omp_get_num_threads();
      if (grain > 0) threads = std::min(threads, (size + grain - 1) / grain);
      const int64_t chunk = (size + threads - 1) / threads;
      const int64_t first = begin + omp_get_thread_num() * chunk;
      if (first < end) {
        try {
          body(first, std::min(end, first + chunk));
        } catch (...) {
          if (!failed.test_and_set()) error = std::current_exception();
        }
      }
    }
    if (error) std::rethrow_exception(error);
    return;
  }
#endif
  (void)grain;
  body(begin, end);
}

bool parallel_for_uses_threads() {
#ifdef _OPENMP
  return true;
#else
  return false;
#endif
}

}  // namespace ctrainer
