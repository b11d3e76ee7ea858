// libctrainer_cuda.so: the calls of ctrainer that need libtorch_cuda's symbols. Programs link
// libtorch_cpu only and dlopen() this module when a GPU can be used (distributed/cuda_support.h
// says why); linking it pulls in libtorch_cuda and, through it, the CUDA libraries.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <ctrainer/distributed/cuda_support.h>

namespace ctrainer {
namespace {

c10::intrusive_ptr<c10d::Backend> create_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                      int64_t rank, int64_t world_size,
                                                      int64_t local_rank,
                                                      std::chrono::milliseconds timeout) {
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(local_rank));  // device = local rank
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, static_cast<int>(rank),
                                                     static_cast<int>(world_size), options);
}

int compute_capability_major(c10::DeviceIndex device) {
  return at::cuda::getDeviceProperties(device)->major;
}

const CudaSupportApi kApi{kCudaSupportApiVersion, &create_nccl_backend, &compute_capability_major};

}  // namespace
}  // namespace ctrainer

extern "C" __attribute__((visibility("default"))) const ctrainer::CudaSupportApi*
ctrainer_cuda_support_api() {
  return &ctrainer::kApi;
}
