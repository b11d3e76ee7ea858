#include <ctrainer/trainer/runtime/seed.h>

#include <cstdlib>

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/utils.h>

namespace ctrainer {

void set_seed(int64_t seed) {
  torch::manual_seed(static_cast<uint64_t>(seed));
  if (torch::cuda::is_available()) torch::cuda::manual_seed_all(static_cast<uint64_t>(seed));
}

void enable_full_determinism(int64_t seed) {
  set_seed(seed);
  // Must be set before the first cuBLAS call to take effect; harmless on CPU.
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  at::globalContext().setDeterministicCuDNN(true);
  at::globalContext().setBenchmarkCuDNN(false);
}

}  // namespace ctrainer
