// Which BLAS libtorch uses (the reference-BLAS warning) and the explicit intra-op thread count.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <ATen/Parallel.h>

#include <ctrainer/trainer/cpu_runtime.h>

namespace ctrainer {
namespace {

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
  EXPECT_FALSE(uses_reference_blas(
      "generic", "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"));
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

}  // namespace
}  // namespace ctrainer
