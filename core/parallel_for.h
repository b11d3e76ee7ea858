#pragma once
/// \file Splitting a loop over libtorch's intra-op threads from our own code.
///
/// Why not at::parallel_for: it is a header template whose threads come from an
/// `#pragma omp parallel` in ATen/ParallelOpenMP.h, which only a translation unit compiled with
/// -fopenmp sees. Ours are not (the flag would rebuild the shared precompiled header, and clang's
/// sanitizer build has no libgomp), so there at::parallel_for quietly ran every range on the
/// calling thread: ctrainer::dropout's mask loop, for one, used one of two cores. This file's
/// implementation is the one translation unit compiled with -fopenmp; it runs on libtorch's own
/// OpenMP runtime (the same libgomp.so.1), with the thread count at::set_num_threads set.
#include <cstdint>
#include <functional>

namespace ctrainer {

/// Calls body(begin, end) on consecutive chunks covering [begin, end), one chunk per OpenMP
/// thread as at::parallel_for splits it: on the calling thread alone when the range has at most
/// `grain` elements, when called from inside a parallel region, or when the build has no OpenMP
/// (the clang sanitizer build). The first exception a chunk throws is rethrown here.
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& body);

/// Whether parallel_for can use more than the calling thread in this build.
bool parallel_for_uses_threads();

}  // namespace ctrainer
