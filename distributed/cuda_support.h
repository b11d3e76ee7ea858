#pragma once
/// \file libtorch's CUDA half, loaded only when a GPU can be used.
///
/// libtorch_cuda.so and the CUDA libraries it needs (cuBLAS/cuBLASLt, cuSPARSELt, NVRTC, NCCL,
/// cuFFT, ...) cost ~370 MB of resident memory and ~0.13 s before main() when a program links
/// them, on a CPU run as much as on a GPU one (measured: a program linking only libtorch_cpu
/// peaks at 115 MB, one linking libtorch_cuda too at 482 MB). ctrainer's programs therefore link
/// libtorch_cpu alone, and the code that needs libtorch_cuda lives in a small module,
/// libctrainer_cuda.so, which is dlopen()ed before main() when the NVIDIA driver (libcuda.so.1) is
/// installed. Loading it loads libtorch_cuda, whose static initialisers register the CUDA kernels
/// and ATen's CUDA hooks exactly as when it is linked.
///
/// This must happen before anything asks ATen about CUDA: ATen caches its CUDA hooks on first
/// use (at::detail::getCUDAHooks), and a process that asked before libtorch_cuda was loaded
/// never sees a GPU. The static initialiser of cuda_support.cpp runs before main() in every
/// program that can select a device (select_device uses this file).
///
/// CTRAINER_CUDA (environment): "auto" (default: load when the driver is installed), "on" (always
/// load: on a machine without a GPU this checks that the CUDA half links and loads), "off"
/// (never: a CPU run on a GPU machine without the ~370 MB).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Backend;
class Store;
}  // namespace c10d

namespace ctrainer {

/// What libctrainer_cuda.so provides: the calls that need libtorch_cuda's symbols.
struct CudaSupportApi {
  /// Must equal kCudaSupportApiVersion: a module from another ctrainer build is refused.
  int api_version = 0;
  /// A ProcessGroupNCCL for this rank; selects cuda:<local_rank> first (one GPU per process).
  c10::intrusive_ptr<c10d::Backend> (*create_nccl_backend)(
      const c10::intrusive_ptr<c10d::Store>& store, int64_t rank, int64_t world_size,
      int64_t local_rank, std::chrono::milliseconds timeout) = nullptr;
  /// The compute capability's major number of a CUDA device (8 = Ampere).
  int (*compute_capability_major)(c10::DeviceIndex device) = nullptr;
};

/// Bumped whenever CudaSupportApi changes.
inline constexpr int kCudaSupportApiVersion = 1;

/// The file name of the module, searched next to the program (and in ../lib of its folder), in
/// the install prefix's library folder, then in the build tree.
inline constexpr const char* kCudaSupportModuleName = "libctrainer_cuda.so";

/// The loaded module's functions, or nullptr when CUDA support is not loaded (a CPU-only
/// build, no driver, CTRAINER_CUDA=off, or the module failed to load: see cuda_support_status).
const CudaSupportApi* cuda_support();

/// Why cuda_support() is what it is, for messages: "loaded from <path>", "not loaded: <reason>".
const std::string& cuda_support_status();

/// Set when an NVIDIA driver is installed but the module failed to load (CTRAINER_CUDA=auto):
/// select_device logs it, since the run then trains on the CPU.
std::optional<std::string> cuda_support_warning();

/// Throws ArgumentError when CTRAINER_CUDA held a value other than auto/on/off, or when it asked
/// for CUDA (on) and the module could not be loaded; select_device calls it.
void require_valid_cuda_support_setting();

/// The module's functions; throws ArgumentError naming `what` and cuda_support_status() when
/// CUDA support is not loaded.
const CudaSupportApi& require_cuda_support(const std::string& what);

}  // namespace ctrainer
