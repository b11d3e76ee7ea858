// Which BLAS libtorch uses (the reference-BLAS warning) and the explicit intra-op thread count.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <ATen/Parallel.h>

#include <ctrainer/trainer/runtime/cpu_runtime.h>

#include "support/resident_memory.h"

namespace ctrainer {
namespace cpu_runtime_test {

// libtorch_cpu exports a copy of libstdc++'s std::filesystem (pytorch/pytorch#133437); mixing it
// with the system's (path objects built by one, used by the other) is what the programs must
// avoid. They list libstdc++ before libtorch (CMakeLists.txt), so the system's copy is the one
// every caller binds to.
TEST(CpuRuntime, StdFilesystemComesFromTheSystemsLibstdcxxNotLibtorch) {
  using CreateDirectories = bool (*)(const std::filesystem::path&);
  const auto create = static_cast<CreateDirectories>(&std::filesystem::create_directories);
  Dl_info info{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(create), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("libstdc++"), std::string::npos) << info.dli_fname;
  // A symbol libstdc++ itself needs (the exception type of every throwing std::filesystem call).
  void* what = ::dlsym(RTLD_DEFAULT, "_ZNKSt10filesystem7__cxx1116filesystem_error4whatEv");
  ASSERT_NE(what, nullptr);
  ASSERT_NE(::dladdr(what, &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("libstdc++"), std::string::npos) << info.dli_fname;
}

TEST(CpuRuntime, TheWheelsLibtorchHasItsOwnOptimisedBlas) {
  // The pinned x86-64 wheel links MKL into libtorch_cpu: nothing to warn about, whatever
  // libblas.so.3 the system has.
  const std::string info = libtorch_blas_info();
  ASSERT_FALSE(info.empty());
  EXPECT_NE(info, "generic");
  EXPECT_FALSE(uses_reference_blas(info, "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"));
}

TEST(CpuRuntime, AGenericBlasLibtorchWarnsOnlyAboutNetlibsReferenceBlas) {
  const std::string netlib = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0";
  EXPECT_TRUE(uses_reference_blas("generic", netlib));
  EXPECT_TRUE(uses_reference_blas("", netlib));  // unknown build: judge by the mapped library
  EXPECT_FALSE(
      uses_reference_blas("generic", "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"));
  EXPECT_FALSE(uses_reference_blas("generic", "/opt/intel/mkl/lib/libmkl_rt.so"));
  EXPECT_FALSE(uses_reference_blas("generic", ""));  // no BLAS mapped
  EXPECT_FALSE(uses_reference_blas("open", netlib));
}

TEST(CpuRuntime, IntraOpThreadsAreSetFromTheCoresPerProcess) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) GTEST_SKIP() << "OMP_NUM_THREADS is set";
  configure_intra_op_threads(1);
  const int all = at::get_num_threads();
  EXPECT_GE(all, 1);
  configure_intra_op_threads(all * 4);  // more processes than cores: one thread each
  EXPECT_EQ(at::get_num_threads(), 1);
  configure_intra_op_threads(1);
  EXPECT_EQ(at::get_num_threads(), all);
}

}  // namespace cpu_runtime_test
}  // namespace ctrainer

namespace ctrainer {
namespace cpu_runtime_test {

using testing::resident_bytes;

TEST(CpuRuntime, KeptFreeMemoryStaysResidentUntilReleased) {
  if (!keep_freed_memory()) GTEST_SKIP() << "malloc settings overridden by the environment";
  constexpr size_t kBytes = 24 << 20;  // below the 32 MiB mmap threshold: from the heap
  // Touch every page, then free: with the kept settings the pages stay resident.
  void* first = std::malloc(kBytes);
  void* second = std::malloc(kBytes);  // keeps `first` away from the top of the heap
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  std::memset(first, 1, kBytes);
  std::memset(second, 1, kBytes);
  std::free(first);
  std::free(second);
  const int64_t kept = resident_bytes();
  release_freed_memory();
  const int64_t released = resident_bytes();
  EXPECT_GE(kept - released, static_cast<int64_t>(kBytes))
      << "kept " << kept << " B resident, " << released << " B after release_freed_memory()";
}

}  // namespace cpu_runtime_test
}  // namespace ctrainer
