// GradScaler against closed-form scale sequences: PyTorch's GradScaler rule (backoff, growth
// after growth_interval clean steps, no growth to inf), DeepSpeed's DynamicLossScaler (window,
// hysteresis with and without consecutive_hysteresis, minimum scale, static scale), unscaling
// with the inf/NaN check, and the state round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/torch_compat.h>
#include <ctrainer/trainer/precision/grad_scaler.h>

#include "support/expect_error.h"

namespace ctrainer {
namespace grad_scaler_test {

at::Tensor flag(bool found_inf) {
  return at::full({1}, found_inf ? 1.0f : 0.0f);
}

/// The scale after each update of `found` (1 = overflow).
std::vector<double> scales_after(GradScaler& scaler, const std::vector<int>& found) {
  std::vector<double> out;
  for (int f : found) {
    scaler.update(flag(f != 0));
    out.push_back(scaler.get_scale());
  }
  return out;
}

GradScalerOptions torch_options(double init_scale, int64_t growth_interval) {
  GradScalerOptions o;
  o.init_scale = init_scale;
  o.growth_interval = growth_interval;
  return o;
}

GradScalerOptions deepspeed_options(int64_t power, int64_t window, int64_t hysteresis) {
  GradScalerOptions o = GradScalerOptions::deepspeed();
  o.initial_scale_power = power;
  o.loss_scale_window = window;
  o.hysteresis = hysteresis;
  return o;
}

TEST(GradScaler, TorchDefaultsAreGradScalers) {
  GradScaler scaler;
  const auto state = scaler.state_dict();
  EXPECT_EQ(state["policy"], "torch");
  EXPECT_EQ(state["scale"], 65536.0);
  EXPECT_EQ(state["growth_factor"], 2.0);
  EXPECT_EQ(state["backoff_factor"], 0.5);
  EXPECT_EQ(state["growth_interval"], 2000);
  EXPECT_EQ(state["_growth_tracker"], 0);
  // The fused kernels are used exactly where the build has them (else the fallback).
  EXPECT_EQ(scaler.uses_fused_kernels(),
            compat::has_kernel_for("aten::_amp_update_scale_", c10::DeviceType::CPU));
}

TEST(GradScaler, TorchBacksOffAtOnceAndGrowsAfterGrowthIntervalCleanSteps) {
  GradScaler scaler(torch_options(8, 3));
  // clean, clean, inf (x0.5, tracker reset), 3 clean (x2 at the third), inf, inf, 3 clean.
  EXPECT_EQ(scales_after(scaler, {0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0}),
            (std::vector<double>{8, 8, 4, 4, 4, 8, 4, 2, 2, 2, 4}));
  EXPECT_EQ(scaler.state_dict()["_growth_tracker"], 0);
  scaler.update(flag(false));
  EXPECT_EQ(scaler.state_dict()["_growth_tracker"], 1);
}

TEST(GradScaler, TorchDefaultGrowthIntervalIs2000) {
  GradScaler scaler;
  for (int i = 0; i < 1999; ++i) scaler.update(flag(false));
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  scaler.update(flag(false));
  EXPECT_EQ(scaler.get_scale(), 131072.0);
  scaler.update(flag(true));
  EXPECT_EQ(scaler.get_scale(), 65536.0);
}

TEST(GradScaler, TorchNeverGrowsToInfinityAndKeepsAFloat32Scale) {
  // 2^127 * 2 overflows float32: the kernel keeps the old scale and still resets the tracker.
  GradScaler scaler(torch_options(std::ldexp(1.0, 127), 1));
  scaler.update(flag(false));
  EXPECT_EQ(scaler.get_scale(), std::ldexp(1.0, 127));
  EXPECT_EQ(scaler.state_dict()["_growth_tracker"], 0);
  // The scale is a float32 tensor in torch: a non-representable init_scale is rounded.
  GradScaler rounded(torch_options(0.1, 5));
  EXPECT_EQ(rounded.get_scale(), static_cast<double>(0.1f));
}

TEST(GradScaler, UnscaleDividesEveryGradientAndFlagsInfAndNaN) {
  auto a = at::tensor({1.0f, -2.0f, 3.0f}).requires_grad_();
  auto b = at::tensor({0.5f, 0.25f}).requires_grad_();
  auto none = at::zeros({2}).requires_grad_();  // no gradient: skipped
  GradScaler scaler(torch_options(1024, 10));
  (scaler.scale((a * a).sum() + (b * 3).sum())).backward();
  auto found = scaler.unscale_({a, b, none});
  EXPECT_EQ(found.item<float>(), 0.0f);
  EXPECT_TRUE(a.grad().equal(at::tensor({2.0f, -4.0f, 6.0f})));
  EXPECT_TRUE(b.grad().equal(at::tensor({3.0f, 3.0f})));

  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    a.mutable_grad() = at::tensor({1024.0f, bad, 2048.0f});
    b.mutable_grad() = at::tensor({4096.0f, 512.0f});
    found = scaler.unscale_({a, b});
    EXPECT_EQ(found.item<float>(), 1.0f) << bad;
    // torch unscales every gradient even when one overflowed.
    EXPECT_TRUE(b.grad().equal(at::tensor({4.0f, 0.5f})));
    EXPECT_EQ(a.grad()[0].item<float>(), 1.0f);
  }
}

TEST(GradScaler, OverflowIsCheckedBeforeUnscalingAsTheKernelDoes) {
  // A scale below 1 enlarges gradients: a finite scaled value may become inf after unscaling,
  // which torch's kernel does not count as an overflow (it checks the scaled value).
  GradScaler scaler(torch_options(0.5, 10));
  auto p = at::zeros({1}).requires_grad_();
  p.mutable_grad() = at::full({1}, 3e38f);
  EXPECT_EQ(scaler.unscale_({p}).item<float>(), 0.0f);
  EXPECT_TRUE(std::isinf(p.grad().item<float>()));
}

TEST(GradScaler, UnscalesSparseGradients) {
  GradScaler scaler(torch_options(4, 10));
  auto p = at::zeros({4}).requires_grad_();
  p.mutable_grad() = at::sparse_coo_tensor(at::tensor({int64_t{1}, int64_t{3}}).reshape({1, 2}),
                                           at::tensor({8.0f, 4.0f}), {4});
  EXPECT_EQ(scaler.unscale_({p}).item<float>(), 0.0f);
  EXPECT_TRUE(p.grad().to_dense().equal(at::tensor({0.0f, 2.0f, 0.0f, 1.0f})));
  p.mutable_grad() = at::sparse_coo_tensor(
      at::zeros({1, 1}, at::kLong), at::tensor({std::numeric_limits<float>::infinity()}), {4});
  EXPECT_EQ(scaler.unscale_({p}).item<float>(), 1.0f);
}

TEST(GradScaler, DeepSpeedDefaults) {
  GradScaler scaler(GradScalerOptions::deepspeed());
  const auto state = scaler.state_dict();
  EXPECT_EQ(state["policy"], "deepspeed");
  EXPECT_EQ(state["cur_scale"], 65536.0);  // 2^16
  EXPECT_EQ(state["scale_window"], 1000);
  EXPECT_EQ(state["delayed_shift"], 2);
  EXPECT_EQ(state["cur_hysteresis"], 2);
  EXPECT_EQ(state["min_scale"], 1.0);
  EXPECT_EQ(state["consecutive_hysteresis"], false);
  EXPECT_EQ(state["dynamic"], true);
  // The first doubling comes after loss_scale_window clean steps.
  for (int i = 0; i < 999; ++i) scaler.update(flag(false));
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  scaler.update(flag(false));
  EXPECT_EQ(scaler.get_scale(), 131072.0);
}

TEST(GradScaler, DeepSpeedHysteresisIsRefilledOnlyWhenTheScaleGrows) {
  // DynamicLossScaler(init 2^4, window 3, delayed_shift 2), worked by hand from update_scale:
  // it0 inf: hysteresis 2->1 (scale kept); it1 inf: 16->8; it2,it3 clean; it4 clean:
  // (4-1)%3==0 -> 16 and hysteresis refilled; it5 inf: 2->1; it6 clean (not refilled);
  // it7 inf: 16->8.
  GradScaler scaler(deepspeed_options(4, 3, 2));
  EXPECT_EQ(scales_after(scaler, {1, 1, 0, 0, 0, 1, 0, 1}),
            (std::vector<double>{16, 8, 8, 8, 16, 16, 16, 8}));
  const auto state = scaler.state_dict();
  EXPECT_EQ(state["cur_iter"], 8);
  EXPECT_EQ(state["last_overflow_iter"], 7);
  EXPECT_EQ(state["cur_hysteresis"], 1);
}

TEST(GradScaler, DeepSpeedConsecutiveHysteresisIsRefilledByEveryCleanStep) {
  GradScaler scaler([] {
    auto o = deepspeed_options(4, 3, 2);
    o.consecutive_hysteresis = true;
    return o;
  }());
  // Same sequence: the clean it6 refills the hysteresis, so the overflow at it7 is absorbed.
  EXPECT_EQ(scales_after(scaler, {1, 1, 0, 0, 0, 1, 0, 1}),
            (std::vector<double>{16, 8, 8, 8, 16, 16, 16, 16}));
}

TEST(GradScaler, DeepSpeedStopsAtTheMinimumScaleAndThenRaises) {
  auto o = deepspeed_options(2, 1000, 1);  // scale 4, no hysteresis
  o.min_loss_scale = 1.5;
  GradScaler scaler(o);
  EXPECT_EQ(scales_after(scaler, {1, 1}), (std::vector<double>{2, 1.5}));
  try {
    scaler.update(flag(true));
    ADD_FAILURE() << "no error at the minimum scale";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("minimum"), std::string::npos) << e.what();
  }
  o.raise_error_at_min_scale = false;
  GradScaler tolerant(o);
  EXPECT_EQ(scales_after(tolerant, {1, 1, 1, 0}), (std::vector<double>{2, 1.5, 1.5, 1.5}));
}

TEST(GradScaler, DeepSpeedStaticScaleNeverChanges) {
  auto o = GradScalerOptions::deepspeed();
  o.loss_scale = 128;
  GradScaler scaler(o);
  EXPECT_EQ(scales_after(scaler, {1, 1, 1, 0, 0}), (std::vector<double>(5, 128.0)));
  EXPECT_EQ(scaler.state_dict()["dynamic"], false);
  // Overflow is still detected (the caller skips the step).
  auto p = at::zeros({1}).requires_grad_();
  p.mutable_grad() = at::full({1}, std::numeric_limits<float>::infinity());
  EXPECT_EQ(scaler.unscale_({p}).item<float>(), 1.0f);
}

TEST(GradScaler, StateRoundTripsAndContinuesIdentically) {
  const std::vector<int> first = {0, 1, 0, 0, 1, 0};
  const std::vector<int> then = {0, 0, 0, 1, 0, 0, 0, 0};
  for (const auto& options : {torch_options(64, 3), deepspeed_options(6, 3, 2)}) {
    GradScaler a(options);
    scales_after(a, first);
    const nlohmann::json saved = nlohmann::json::parse(a.state_dict().dump());
    // A scaler made with other settings takes the saved ones (torch's load_state_dict).
    GradScaler b(options.policy == GradScalerOptions::Policy::kTorch
                     ? GradScalerOptions{}
                     : GradScalerOptions::deepspeed());
    b.load_state_dict(saved);
    EXPECT_EQ(b.state_dict(), a.state_dict());
    EXPECT_EQ(scales_after(b, then), scales_after(a, then));
    EXPECT_EQ(b.state_dict(), a.state_dict());
  }
}

TEST(GradScaler, LoadRefusesTheOtherPolicyAndMalformedState) {
  GradScaler torch_scaler;
  GradScaler ds_scaler(GradScalerOptions::deepspeed());
  auto expect_refused = [](GradScaler& s, const nlohmann::json& state, const std::string& part) {
    try {
      s.load_state_dict(state);
      ADD_FAILURE() << "accepted " << state.dump();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_refused(torch_scaler, ds_scaler.state_dict(), "deepspeed");
  expect_refused(ds_scaler, torch_scaler.state_dict(), "torch");
  auto missing = torch_scaler.state_dict();
  missing.erase("_growth_tracker");
  expect_refused(torch_scaler, missing, "_growth_tracker");
  auto bad = torch_scaler.state_dict();
  bad["growth_factor"] = 0.5;
  expect_refused(torch_scaler, bad, "growth_factor");
  auto future = torch_scaler.state_dict();
  future["format_version"] = 9;
  expect_refused(torch_scaler, future, "format_version");
  // Numbers a file can hold that the scaler cannot (found by fuzz/grad_scaler_fuzzer.cpp; the
  // inputs are in fuzz/corpus/grad_scaler/): no cast of 1e300 to an integer, no float32 scale
  // of inf, no counter that overflows at the next update.
  auto huge_version = torch_scaler.state_dict();
  huge_version["format_version"] = 1e300;
  expect_refused(torch_scaler, huge_version, "format_version");
  auto float_interval = torch_scaler.state_dict();
  float_interval["growth_interval"] = 1e300;
  expect_refused(torch_scaler, float_interval, "\"growth_interval\" must be an integer");
  auto huge_scale = torch_scaler.state_dict();
  huge_scale["scale"] = 1e300;
  expect_refused(torch_scaler, huge_scale, "float32");
  auto tracker = torch_scaler.state_dict();
  tracker["_growth_tracker"] = tracker["growth_interval"];
  expect_refused(torch_scaler, tracker, "\"_growth_tracker\" must be an integer in [0, 1999]");
  auto iterations = ds_scaler.state_dict();
  iterations["cur_iter"] = std::numeric_limits<int64_t>::max();
  expect_refused(ds_scaler, iterations, "\"cur_iter\"");
  auto hysteresis = ds_scaler.state_dict();
  hysteresis["cur_hysteresis"] = -5;
  expect_refused(ds_scaler, hysteresis, "\"cur_hysteresis\" must be an integer in [1, 2]");
}

TEST(GradScaler, BadOptionsNameTheOption) {
  auto expect_bad = [](GradScalerOptions o, const std::string& name) {
    testing::expect_error([&] { GradScaler s(o); }, {name});
  };
  auto t = GradScalerOptions{};
  t.growth_factor = 1.0;
  expect_bad(t, "growth_factor");
  t = GradScalerOptions{};
  t.backoff_factor = 1.0;
  expect_bad(t, "backoff_factor");
  t = GradScalerOptions{};
  t.growth_interval = 0;
  expect_bad(t, "growth_interval");
  t = GradScalerOptions{};
  t.init_scale = -1;
  expect_bad(t, "init_scale");
  auto d = GradScalerOptions::deepspeed();
  d.hysteresis = 0;
  expect_bad(d, "hysteresis");
  d = GradScalerOptions::deepspeed();
  d.loss_scale_window = 0;
  expect_bad(d, "loss_scale_window");
  d = GradScalerOptions::deepspeed();
  d.loss_scale = -2;
  expect_bad(d, "loss_scale");
  d = GradScalerOptions::deepspeed();
  d.min_loss_scale = 0;
  expect_bad(d, "min_loss_scale");
}

}  // namespace grad_scaler_test
}  // namespace ctrainer
