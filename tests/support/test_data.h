#pragma once
// Small deterministic datasets and quiet TrainingArguments shared by the unit tests.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/callbacks/trainer_callback.h>
#include <ctrainer/trainer/data/dataset.h>

namespace ctrainer::testing {

/// y = x . w_true + b_true (+ optional noise) with x ~ N(0,1), from a private generator.
inline std::shared_ptr<TensorDataset> make_regression_dataset(int64_t n, int64_t features,
                                                              uint64_t seed = 0) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor x = at::randn({n, features}, gen, at::kFloat);
  at::Tensor w = at::arange(1, features + 1, at::kFloat) / features;
  at::Tensor y = (x.matmul(w) + 0.5).unsqueeze(1);
  return std::make_shared<TensorDataset>(
      std::map<std::string, at::Tensor>{{"x", x}, {"labels", y}});
}

/// Two Gaussian blobs at (+2, +2, ...) and (-2, -2, ...): linearly separable, labels 0/1.
inline std::shared_ptr<TensorDataset> make_blobs_dataset(int64_t n, int64_t features,
                                                         uint64_t seed = 0) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor labels = at::arange(n, at::kLong).remainder(2);
  at::Tensor centers = (labels.to(at::kFloat) * 4 - 2).unsqueeze(1).expand({n, features});
  at::Tensor x = centers + 0.5 * at::randn({n, features}, gen, at::kFloat);
  return std::make_shared<TensorDataset>(
      std::map<std::string, at::Tensor>{{"x", x}, {"labels", labels}});
}

/// Removes the directories fresh_output_dir() made when the test program ends, unless a test
/// failed (they are then kept for a look, and named in the log) or CTRAINER_KEEP_TEST_DIRS=1.
class TestDirectories {
 public:
  static TestDirectories& instance() {
    static TestDirectories directories;
    return directories;
  }
  void add(const std::filesystem::path& dir) { made_.push_back(dir); }
  ~TestDirectories() {
    const char* keep = std::getenv("CTRAINER_KEEP_TEST_DIRS");
    if ((keep != nullptr && std::string(keep) == "1") ||
        ::testing::UnitTest::GetInstance()->Failed()) {
      for (const auto& dir : made_)
        if (std::filesystem::exists(dir)) std::fprintf(stderr, "kept %s\n", dir.c_str());
      return;
    }
    std::error_code ignored;  // a test that removed its own directory, or a busy file system
    for (const auto& dir : made_) std::filesystem::remove_all(dir, ignored);
  }

 private:
  std::vector<std::filesystem::path> made_;
};

/// A fresh, empty output directory, unique per process and test: ctest -j runs test processes in
/// parallel, and two of them must never share (and delete) a directory. Removed when the program
/// ends (TestDirectories).
inline std::string fresh_output_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string test =
      info != nullptr ? std::string(info->test_suite_name()) + "." + info->name() : "none";
  auto dir = std::filesystem::path(::testing::TempDir()) /
             ("ctrainer_" + std::to_string(::getpid()) + "_" + test + "_" + name);
  std::filesystem::remove_all(dir);
  TestDirectories::instance().add(dir);
  return dir.string();
}

/// Arguments that keep tests quiet and fast: no progress bar, warnings only, on the CPU even on
/// a GPU machine (these tests compare with CPU computations; tests/unit/cuda_test.cpp covers
/// the GPU).
inline TrainingArguments quiet_args(const std::string& name) {
  TrainingArguments args;
  args.use_cpu = true;
  args.output_dir = fresh_output_dir(name);
  args.disable_tqdm = true;
  args.log_level = LogLevel::kError;
  args.logging_steps = 1000000;
  return args;
}

/// Stops training after global step k (simulates an interrupted run).
class StopAt : public TrainerCallback {
 public:
  explicit StopAt(int64_t k) : k_(k) {}
  std::string name() const override { return "StopAt"; }
  void on_step_end(Args, TrainerState& s, TrainerControl& c, Ctx) override {
    if (s.global_step == k_) c.should_training_stop = true;
  }

 private:
  int64_t k_;
};

}  // namespace ctrainer::testing
