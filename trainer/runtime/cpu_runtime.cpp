#include <ctrainer/trainer/runtime/cpu_runtime.h>

#include <malloc.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <ATen/Parallel.h>
#include <ATen/Version.h>

#include <ctrainer/trainer/runtime/large_buffer_cache.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer {

std::string libtorch_blas_info() {
  const std::string config = at::show_config();
  const std::string key = "BLAS_INFO=";
  const auto at_key = config.find(key);
  if (at_key == std::string::npos) return "";
  const auto begin = at_key + key.size();
  return config.substr(begin, config.find_first_of(", \n", begin) - begin);
}

std::string mapped_blas_library() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find("libblas.so") == std::string::npos &&
        path.find("libopenblas") == std::string::npos)
      continue;
    std::error_code ec;
    const auto real = std::filesystem::canonical(path, ec);
    return ec ? path : real.string();
  }
  return "";
}

bool uses_reference_blas(const std::string& blas_info, const std::string& mapped_blas) {
  if (!blas_info.empty() && blas_info != "generic") return false;  // optimised BLAS built in
  if (mapped_blas.empty()) return false;                           // no system BLAS in use
  for (const char* fast : {"openblas", "mkl", "blis"})
    if (mapped_blas.find(fast) != std::string::npos) return false;
  return true;
}

void warn_if_reference_blas() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string blas = mapped_blas_library();
    if (!uses_reference_blas(libtorch_blas_info(), blas)) return;
    logging::logger()->warn(
        "libtorch uses the reference BLAS ({}), 10-25x slower than OpenBLAS for training. "
        "Install it with: apt-get install libopenblas0-openmp (or build against the pinned "
        "torch wheel, which brings MKL: scripts/install-deps.sh)",
        blas);
  });
}

void configure_intra_op_threads(int64_t local_world_size) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores = 1;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  const int per_process =
      std::max<int>(1, cores / static_cast<int>(std::max<int64_t>(1, local_world_size)));
  if (at::get_num_threads() != per_process) at::set_num_threads(per_process);
}

namespace {
std::atomic<bool> malloc_settings_applied{false};
}  // namespace

void release_freed_memory() {
  if (LargeBufferCache* cache = installed_large_buffer_cache()) cache->release_cached();
  if (malloc_settings_applied.load()) malloc_trim(0);
}

bool keep_freed_memory(const MallocSettings& settings) {
  static const bool applied = [&] {
    for (const char* variable : {"CTRAINER_MALLOC_DEFAULTS", "MALLOC_MMAP_THRESHOLD_",
                                 "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
      const char* value = std::getenv(variable);
      if (value != nullptr && std::string(value) != "0") return false;
    }
    // Each call returns 1 on success; setting the thresholds also turns off glibc's dynamic
    // threshold, which would otherwise lower them again.
    return mallopt(M_MMAP_THRESHOLD, settings.mmap_threshold) == 1 &&
           mallopt(M_TRIM_THRESHOLD, settings.trim_threshold) == 1 &&
           mallopt(M_TOP_PAD, settings.top_pad) == 1;
  }();
  malloc_settings_applied = applied;
  return applied;
}

}  // namespace ctrainer
