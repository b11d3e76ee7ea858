// Loading libtorch's CUDA half only when a GPU can be used (distributed/cuda_support.h): a CPU
// process on a machine without the NVIDIA driver never maps libtorch_cuda or the CUDA libraries
// behind it; CTRAINER_CUDA=on loads the module (and with it libtorch_cuda and ATen's real CUDA
// hooks) even there, which checks that the module links and loads; off never loads; anything
// else is a clear error. The setting is read before main(), so each case runs this program again
// with the variable set and reads what the hidden DISABLED_ test printed.
#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <ATen/detail/CUDAHooksInterface.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/cuda_support.h>
#include <ctrainer/distributed/process_group.h>
#include <ctrainer/trainer/runtime/device.h>
#include <ctrainer/trainer/runtime/seed.h>

#include "support/process.h"

namespace ctrainer {
namespace cuda_support_test {

#ifdef CTRAINER_WITH_CUDA
constexpr bool kBuiltWithCuda = true;
#else
constexpr bool kBuiltWithCuda = false;
#endif

bool mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(library) != std::string::npos) return true;
  return false;
}

bool nvidia_driver_installed() {
  return ::dlopen("libcuda.so.1", RTLD_LAZY) != nullptr;
}

/// Runs the hidden report test in a fresh process with CTRAINER_CUDA=`setting`.
testing::CommandResult report_with(const std::string& setting) {
  return testing::run_shell("CTRAINER_CUDA=" + setting + " /proc/" + std::to_string(::getpid()) +
                            "/exe --gtest_also_run_disabled_tests "
                            "--gtest_filter=DISABLED_CudaSupportReport.Print");
}

// Not run by ctest (DISABLED_): the cases below start it with CTRAINER_CUDA set.
TEST(DISABLED_CudaSupportReport, Print) {
  std::string select_error = "none";
  try {
    TrainingArguments args;
    (void)select_device(args, 0);
    set_seed(42);
  } catch (const ArgumentError& error) {
    select_error = error.what();
  }
  std::string nccl_error = "none";
  if (!torch::cuda::is_available()) {
    try {
      (void)require_cuda_support("--ddp_backend nccl");
    } catch (const ArgumentError& error) {
      nccl_error = error.what();
    }
  }
  std::cout << "loaded=" << (cuda_support() != nullptr) << "\n"
            << "status=" << cuda_support_status() << "\n"
            << "libtorch_cuda_mapped=" << mapped("/libtorch_cuda.so") << "\n"
            << "cublasLt_mapped=" << mapped("/libcublasLt.so") << "\n"
            << "real_cuda_hooks=" << at::detail::getCUDAHooks().hasCUDART() << "\n"
            << "nccl_factory=" << (cuda_support() && cuda_support()->create_nccl_backend) << "\n"
            << "select_error=" << select_error << "\n"
            << "nccl_error=" << nccl_error << "\n";
}

TEST(CudaSupport, CpuProcessWithoutADriverNeverMapsLibtorchCuda) {
  if (!kBuiltWithCuda) GTEST_SKIP() << "built without CTRAINER_WITH_CUDA";
  if (nvidia_driver_installed()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  TrainingArguments args;
  EXPECT_TRUE(select_device(args, 0).is_cpu());
  set_seed(42);
  EXPECT_EQ(cuda_support(), nullptr);
  EXPECT_NE(cuda_support_status().find("no NVIDIA driver"), std::string::npos)
      << cuda_support_status();
  EXPECT_FALSE(mapped("/libtorch_cuda.so"));
  EXPECT_FALSE(mapped("/libcublasLt.so"));
  EXPECT_FALSE(at::detail::getCUDAHooks().hasCUDART());
  // NCCL needs the module: a clear error, not a crash.
  try {
    (void)require_cuda_support("--ddp_backend nccl");
    FAIL() << "expected an ArgumentError";
  } catch (const ArgumentError& error) {
    EXPECT_NE(std::string(error.what()).find("--ddp_backend nccl needs CUDA"), std::string::npos)
        << error.what();
  }
}

TEST(CudaSupport, OnLoadsTheModuleWithLibtorchCudaAndItsHooks) {
  if (!kBuiltWithCuda) GTEST_SKIP() << "built without CTRAINER_WITH_CUDA";
  const auto result = report_with("on");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("loaded=1\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("status=loaded from /"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("libctrainer_cuda.so\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("libtorch_cuda_mapped=1\n"), std::string::npos) << result.output;
  // libtorch_cuda's static initialisers ran before anything asked ATen about CUDA.
  EXPECT_NE(result.output.find("real_cuda_hooks=1\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("nccl_factory=1\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("select_error=none\n"), std::string::npos) << result.output;
}

TEST(CudaSupport, OffNeverLoadsAndNcclSaysWhy) {
  if (!kBuiltWithCuda) GTEST_SKIP() << "built without CTRAINER_WITH_CUDA";
  const auto result = report_with("off");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("loaded=0\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("status=not loaded: CTRAINER_CUDA=off\n"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("libtorch_cuda_mapped=0\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("cublasLt_mapped=0\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("real_cuda_hooks=0\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("nccl_error=--ddp_backend nccl needs CUDA, but CUDA support: not "
                               "loaded: CTRAINER_CUDA=off; use --ddp_backend gloo"),
            std::string::npos)
      << result.output;
}

TEST(CudaSupport, AnUnknownSettingIsAClearErrorAtDeviceSelection) {
  if (!kBuiltWithCuda) GTEST_SKIP() << "built without CTRAINER_WITH_CUDA";
  const auto result = report_with("yes");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("loaded=0\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("select_error=CTRAINER_CUDA=yes is not auto, on or off; unset it "
                               "or use one of those"),
            std::string::npos)
      << result.output;
}

}  // namespace cuda_support_test
}  // namespace ctrainer
