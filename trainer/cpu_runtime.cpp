#include <ctrainer/trainer/cpu_runtime.h>

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <ATen/Parallel.h>

#include <ctrainer/trainer/logging.h>

namespace ctrainer {

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

void warn_if_reference_blas() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string blas = mapped_blas_library();
    if (blas.empty() || blas.find("openblas") != std::string::npos ||
        blas.find("mkl") != std::string::npos || blas.find("blis") != std::string::npos)
      return;
    logging::logger()->warn(
        "libtorch uses the reference BLAS ({}), 10-25x slower than OpenBLAS for training. "
        "Install it with: apt-get install libopenblas0-openmp",
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

}  // namespace ctrainer
