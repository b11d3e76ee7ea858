// StepProfiler (--profile_steps): which steps are timed, that the phases, communication and
// "other" add up to the step, that nested scopes and time blocked in collectives are not counted
// twice, the first step's timestamps, and the Trainer's profile.json.
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <ctrainer/core/json_file.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/runtime/step_profiler.h>
#include <ctrainer/trainer/trainer.h>

#include "support/test_data.h"

namespace ctrainer {
namespace step_profiler_test {

using std::chrono::milliseconds;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The phases, communication and "other" are one partition of the step's wall time.
void expect_partition(const nlohmann::json& report) {
  double sum = 0;
  for (const auto& [name, ms] : report.at("phases_ms_per_step").items()) sum += ms.get<double>();
  EXPECT_NEAR(sum, report.at("step_ms").get<double>(), 1e-6) << report.dump(2);
}

TEST(StepProfiler, DisabledMeasuresNothing) {
  int synchronized = 0;
  StepProfiler profiler(0, [&] { ++synchronized; }, {});
  EXPECT_FALSE(profiler.enabled());
  for (int64_t step = 1; step <= 4; ++step) {
    profiler.begin_step(step);
    { auto timer = profiler.measure(StepPhase::kForward); }
    EXPECT_FALSE(profiler.end_step(step));
  }
  EXPECT_EQ(synchronized, 0);
  EXPECT_EQ(profiler.report().at("profiled_steps"), 0);
}

TEST(StepProfiler, TimesStepsTwoToNPlusOneAndSubtractsCommunication) {
  double communication = 0;  // a fake collective_wait_seconds()
  int synchronized = 0;
  StepProfiler profiler(
      2, [&] { ++synchronized; }, [&] { return communication; });
  const double before_first_step = unix_now();
  std::vector<bool> ended;
  for (int64_t step = 1; step <= 5; ++step) {
    profiler.begin_step(step);
    {
      auto timer = profiler.measure(StepPhase::kForward);
      std::this_thread::sleep_for(milliseconds(20));
      communication += 0.010;  // 10 ms of the 20 were spent blocked in a collective
      // A nested scope (an evaluation's forward inside...) is not counted a second time.
      auto inner = profiler.measure(StepPhase::kBackward);
    }
    {
      auto timer = profiler.measure(StepPhase::kOptimizer);
      std::this_thread::sleep_for(milliseconds(5));
    }
    ended.push_back(profiler.end_step(step));
  }
  const double after_first_step = unix_now();
  // Only step 3, the last of the window 2..3, completes the profile.
  EXPECT_EQ(ended, (std::vector<bool>{false, false, true, false, false}));
  EXPECT_TRUE(profiler.complete());
  const nlohmann::json r = profiler.report();
  EXPECT_EQ(r.at("profiled_steps"), 2);
  EXPECT_EQ(r.at("first_profiled_step"), 2);
  const auto& phases = r.at("phases_ms_per_step");
  // Steps 1, 4 and 5 added communication too; only steps 2 and 3 count.
  EXPECT_NEAR(phases.at("communication").get<double>(), 10.0, 1e-9);
  EXPECT_GE(phases.at("forward").get<double>(), 10.0 - 1e-6);  // 20 ms slept, 10 ms blocked
  EXPECT_GE(phases.at("optimizer").get<double>(), 5.0 - 1e-6);
  EXPECT_EQ(phases.at("backward").get<double>(), 0.0);
  EXPECT_EQ(phases.at("data_wait").get<double>(), 0.0);
  EXPECT_GE(phases.at("other").get<double>(), -1e-6);
  expect_partition(r);
  EXPECT_GE(r.at("first_step_ms").get<double>(), 25.0 - 1e-6);
  const double first = r.at("first_optimizer_step_unix_time").get<double>();
  EXPECT_GE(first, before_first_step);
  EXPECT_LE(first, after_first_step);
  // Synchronised around every timed scope (2 per scope, 2 scopes per timed step: the nested
  // one measures nothing) and at the starts and ends of step 1 and the timed steps.
  EXPECT_EQ(synchronized, 2 * 2 * 2 + 2 * 3);
  const double started = r.at("process_start_unix_time").get<double>();
  EXPECT_GT(started, 0);
  EXPECT_LE(started, before_first_step + 0.02);  // /proc's 10 ms ticks
  EXPECT_NEAR(r.at("process_start_to_first_step_s").get<double>(), first - started, 1e-9);
}

TEST(StepProfiler, ProcessStartTimeIsThisProcesss) {
  const double started = process_start_unix_time();
  EXPECT_GT(started, unix_now() - 3600.0);  // this test binary started within the hour
  EXPECT_LE(started, unix_now() + 0.02);
}

// A Trainer run with --profile_steps writes output_dir/profile.json; a run shorter than the
// window reports the steps it timed.
TEST(StepProfiler, TrainerWritesProfileJson) {
  for (const int64_t profile_steps : {3, 50}) {
    auto args = testing::quiet_args("profile_" + std::to_string(profile_steps));
    args.max_steps = 8;
    args.per_device_train_batch_size = 8;
    args.profile_steps = profile_steps;
    auto model = std::make_shared<MLPClassifier>(8, 16, 2);
    Trainer trainer(model, args, {.train_dataset = testing::make_blobs_dataset(64, 8, 1)});
    trainer.train();
    const auto path = std::filesystem::path(args.output_dir) / "profile.json";
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    const nlohmann::json r = read_json_file(path, "profile.json");
    EXPECT_EQ(r.at("profiled_steps"), std::min<int64_t>(profile_steps, 7)) << r.dump(2);
    EXPECT_EQ(r.at("profile_steps"), profile_steps);
    EXPECT_EQ(r.at("world_size"), 1);
    EXPECT_EQ(r.at("device"), "cpu");
    for (const char* phase : {"data_wait", "forward", "backward", "clip", "optimizer"})
      EXPECT_GT(r.at("phases_ms_per_step").at(phase).get<double>(), 0.0) << phase;
    EXPECT_EQ(r.at("phases_ms_per_step").at("communication").get<double>(), 0.0);
    expect_partition(r);
    EXPECT_GT(r.at("process_start_to_first_step_s").get<double>(), 0.0);
  }
}

// Activations of 4096 x 2048 floats (32 MiB) are the large-buffer cache's: after the first step
// a training loop that repeats its allocations takes every one of them from the cache.
TEST(StepProfiler, ReportsTheLargeBufferCacheServingEveryTimedStepWithoutAMiss) {
  auto args = testing::quiet_args("profile_cache");
  args.max_steps = 5;
  args.per_device_train_batch_size = 4096;
  args.profile_steps = 3;
  auto model = std::make_shared<MLPClassifier>(64, 2048, 2);
  Trainer trainer(model, args, {.train_dataset = testing::make_blobs_dataset(4096 * 5, 64, 1)});
  if (installed_large_buffer_cache() == nullptr) GTEST_SKIP() << "CTRAINER_MALLOC_DEFAULTS is set";
  trainer.train();
  const nlohmann::json r =
      read_json_file(std::filesystem::path(args.output_dir) / "profile.json", "profile.json");
  const nlohmann::json& cache = r.at("large_buffer_cache");
  EXPECT_GT(cache.at("hits").get<int64_t>(), 3 * 2) << r.dump(2);
  EXPECT_EQ(cache.at("misses").get<int64_t>(), 0) << r.dump(2);
  EXPECT_EQ(cache.at("evictions").get<int64_t>(), 0) << r.dump(2);
  EXPECT_GE(cache.at("peak_live_mb").get<double>(), 32.0) << r.dump(2);
}

TEST(StepProfiler, NegativeProfileStepsIsRefused) {
  TrainingArguments args;
  args.output_dir = "unused";
  args.profile_steps = -1;
  try {
    args.validate();
    FAIL() << "validate() accepted --profile_steps -1";
  } catch (const ArgumentError& error) {
    EXPECT_STREQ(error.what(), "--profile_steps must be >= 0 (got -1); use 0 to profile nothing");
  }
}

}  // namespace step_profiler_test
}  // namespace ctrainer
