// Which BLAS libtorch uses (the reference-BLAS warning) and the explicit intra-op thread count.
#include <gtest/gtest.h>

#include <cstdlib>

#include <ATen/Parallel.h>

#include <ctrainer/trainer/cpu_runtime.h>

namespace ctrainer {
namespace {

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
