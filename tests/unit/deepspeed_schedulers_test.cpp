// DeepSpeed's LR schedulers (trainer/optim/deepspeed_schedulers.h). The golden sequences below
// were printed by DeepSpeed 0.19.8's own classes (deepspeed/runtime/lr_schedules.py) on
// torch.optim optimizers with the same param groups; each is also explained by the closed form
// in its comment. parity.deepspeed_schedulers compares many more cases bit for bit.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/optim/deepspeed_schedulers.h>

namespace ctrainer {
namespace deepspeed_schedulers_test {

using nlohmann::json;
using ::testing::HasSubstr;

// One scalar parameter per group, each with its own lr.
std::shared_ptr<torch::optim::Optimizer> make_sgd(const std::vector<double>& lrs) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (double lr : lrs) {
    groups.emplace_back(std::vector<at::Tensor>{torch::zeros({1}, torch::requires_grad())},
                        std::make_unique<torch::optim::SGDOptions>(lr));
  }
  return std::make_shared<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(lrs[0]));
}

std::shared_ptr<torch::optim::Optimizer> make_adamw(const std::vector<double>& lrs) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (double lr : lrs) {
    groups.emplace_back(std::vector<at::Tensor>{torch::zeros({1}, torch::requires_grad())},
                        std::make_unique<torch::optim::AdamWOptions>(lr));
  }
  return std::make_shared<torch::optim::AdamW>(std::move(groups),
                                               torch::optim::AdamWOptions(lrs[0]));
}

std::vector<double> group_lrs(torch::optim::Optimizer& optimizer) {
  std::vector<double> out;
  for (auto& g : optimizer.param_groups()) out.push_back(g.options().get_lr());
  return out;
}

std::tuple<double, double> betas(torch::optim::Optimizer& optimizer, size_t group = 0) {
  return static_cast<torch::optim::AdamWOptions&>(optimizer.param_groups()[group].options())
      .betas();
}

// Group `group`'s lr after construction and after each of `steps` step() calls.
std::vector<double> lr_sequence(const std::string& type, const json& params,
                                std::shared_ptr<torch::optim::Optimizer> optimizer, int steps,
                                size_t group = 0) {
  auto scheduler = create_deepspeed_scheduler(type, params, optimizer);
  std::vector<double> out{group_lrs(*optimizer)[group]};
  for (int s = 0; s < steps; ++s) {
    scheduler->step();
    out.push_back(group_lrs(*optimizer)[group]);
  }
  return out;
}

void expect_sequence(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << "entry " << i;
}

TEST(DeepSpeedSchedulersTest, WarmupLRLogGolden) {
  // min + (max - min) * log(i + 1) / log(4) for i < 4, then max; the constructor sets min
  // (last_batch_iteration -1) and step 0 gives log(1) = 0.
  const json params = {{"warmup_min_lr", 0.0}, {"warmup_max_lr", 1e-3}, {"warmup_num_steps", 4}};
  expect_sequence(lr_sequence("WarmupLR", params, make_sgd({1.0}), 6),
                  {0.0, 0.0, 0.0005, 0.0007924812503605781, 0.001, 0.001, 0.001});
}

TEST(DeepSpeedSchedulersTest, WarmupLRLinearPerGroupGolden) {
  // min + (max - min) * i / 4 per group.
  const json params = {{"warmup_min_lr", {0.0, 1e-4}},
                       {"warmup_max_lr", {1e-3, 2e-3}},
                       {"warmup_num_steps", 4},
                       {"warmup_type", "linear"}};
  expect_sequence(lr_sequence("WarmupLR", params, make_sgd({1.0, 1.0}), 6, 0),
                  {0.0, 0.0, 0.00025, 0.0005, 0.00075, 0.001, 0.001});
  expect_sequence(lr_sequence("WarmupLR", params, make_sgd({1.0, 1.0}), 6, 1),
                  {0.0001, 0.0001, 0.000575, 0.00105, 0.001525, 0.002, 0.002});
}

TEST(DeepSpeedSchedulersTest, WarmupLRDefaults) {
  // No warmup_max_lr: each group's own lr. Default warmup 1000 steps, log curve, min 0.
  auto optimizer = make_sgd({3e-4, 1e-4});
  auto scheduler = create_deepspeed_scheduler("WarmupLR", json::object(), optimizer);
  EXPECT_EQ(scheduler->last_epoch(), -1);
  EXPECT_EQ(group_lrs(*optimizer), (std::vector<double>{0.0, 0.0}));
  scheduler->step();
  scheduler->step();  // last_batch_iteration 1
  const double gamma = 1.0 / std::log(1000.0) * std::log(2.0);
  EXPECT_DOUBLE_EQ(group_lrs(*optimizer)[0], 3e-4 * gamma);
  EXPECT_DOUBLE_EQ(group_lrs(*optimizer)[1], 1e-4 * gamma);
  EXPECT_EQ(scheduler->get_last_lr(), group_lrs(*optimizer));
}

TEST(DeepSpeedSchedulersTest, WarmupDecayLRGolden) {
  // Linear warm-up to 0.001 (WarmupDecayLR's default max) over 4 steps, then
  // (8 - i) / (8 - 4) down to 0 at total_num_steps 8, and 0 past it.
  const json params = {{"total_num_steps", 8}, {"warmup_num_steps", 4}, {"warmup_type", "linear"}};
  expect_sequence(lr_sequence("WarmupDecayLR", params, make_sgd({1.0}), 10),
                  {0.0, 0.0, 0.00025, 0.0005, 0.00075, 0.001, 0.00075, 0.0005, 0.00025, 0.0, 0.0});
}

TEST(DeepSpeedSchedulersTest, WarmupCosineLRGolden) {
  // org_lr 2e-3 times: 0 at construction; 0.1 + 0.9 * log(i + 1) / log(3) for i < 3; then
  // 0.01 + 0.99 * (1 + cos(pi * min(1, (i - 2) / 4))) / 2, staying at 0.01 past the end.
  const json params = {{"total_num_steps", 7},
                       {"warmup_num_steps", 3},
                       {"warmup_min_ratio", 0.1},
                       {"cos_min_ratio", 0.01}};
  expect_sequence(lr_sequence("WarmupCosineLR", params, make_sgd({2e-3}), 9),
                  {0.0, 0.0002, 0.0013356735564286231, 0.002, 0.001710035713374682, 0.00101,
                   0.0003099642866253181, 2e-05, 2e-05, 2e-05});
}

TEST(DeepSpeedSchedulersTest, OneCycleStairsDecayAndMomentumGolden) {
  // Cycle of 4 up + 2 down steps with 2 stairs each way; then min_lr / (1 + 0.5 * n / 2).
  // beta1 moves the other way between 0.9 and 0.8 and beta2 is set to 0.99 (DeepSpeed's tuple).
  const json params = {{"cycle_min_lr", 1e-4},         {"cycle_max_lr", 1e-3},
                       {"cycle_first_step_size", 4},   {"cycle_second_step_size", 2},
                       {"cycle_first_stair_count", 2}, {"decay_step_size", 2},
                       {"decay_lr_rate", 0.5}};
  auto optimizer = make_adamw({1.0});
  auto scheduler = create_deepspeed_scheduler("OneCycle", params, optimizer);
  const std::vector<double> want_lr = {0.0001,
                                       0.0001,
                                       0.00055,
                                       0.00055,
                                       0.001,
                                       0.00055,
                                       0.0001,
                                       8e-05,
                                       6.666666666666667e-05,
                                       5.714285714285715e-05,
                                       5e-05,
                                       4.4444444444444447e-05,
                                       4e-05};
  const std::vector<double> want_beta1 = {0.8, 0.9, 0.85, 0.85, 0.8, 0.85, 0.9,
                                          0.9, 0.9, 0.9,  0.9,  0.9, 0.9};
  for (size_t s = 0; s < want_lr.size(); ++s) {
    if (s > 0) scheduler->step();
    EXPECT_DOUBLE_EQ(group_lrs(*optimizer)[0], want_lr[s]) << "after " << s << " steps";
    EXPECT_DOUBLE_EQ(std::get<0>(betas(*optimizer)), want_beta1[s]) << "after " << s << " steps";
    EXPECT_EQ(std::get<1>(betas(*optimizer)), 0.99);
  }
}

TEST(DeepSpeedSchedulersTest, OneCycleWithoutBetasLeavesMomentumAlone) {
  // SGD has no betas: DeepSpeed turns cycle_momentum off (with a warning).
  auto optimizer = make_sgd({1.0});
  auto scheduler = create_deepspeed_scheduler(
      "OneCycle", {{"cycle_min_lr", 0.1}, {"cycle_max_lr", 1.0}, {"cycle_first_step_size", 2}},
      optimizer);
  auto* one_cycle = dynamic_cast<OneCycle*>(scheduler.get());
  ASSERT_NE(one_cycle, nullptr);
  EXPECT_FALSE(one_cycle->cycles_momentum());
  scheduler->step();
  EXPECT_DOUBLE_EQ(group_lrs(*optimizer)[0], 0.55);  // 0.1 + 0.9 * (1 / 2)
}

TEST(DeepSpeedSchedulersTest, NonDefaultLastBatchIterationLeavesTheOptimizerAlone) {
  auto optimizer = make_sgd({0.5});
  auto scheduler = create_deepspeed_scheduler(
      "WarmupLR", {{"warmup_max_lr", 1.0}, {"warmup_num_steps", 4}, {"last_batch_iteration", 3}},
      optimizer);
  EXPECT_EQ(scheduler->last_epoch(), 3);
  EXPECT_EQ(group_lrs(*optimizer)[0], 0.5);
  scheduler->step();  // iteration 4: warm-up over
  EXPECT_EQ(group_lrs(*optimizer)[0], 1.0);
}

// Saving mid-schedule and loading into a scheduler built afresh (as a resumed run does) must
// continue exactly like the uninterrupted run, lrs and betas.
struct ResumeCase {
  std::string type;
  json params;
};

class DeepSpeedSchedulerResumeTest : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(DeepSpeedSchedulerResumeTest, StateRoundTripContinuesBitForBit) {
  const auto& c = GetParam();
  constexpr int kSteps = 30;
  constexpr int kSaveAt = 11;
  auto reference_opt = make_adamw({1e-3, 4e-4});
  auto reference = create_deepspeed_scheduler(c.type, c.params, reference_opt);
  auto optimizer = make_adamw({1e-3, 4e-4});
  auto scheduler = create_deepspeed_scheduler(c.type, c.params, optimizer);
  for (int s = 0; s < kSteps; ++s) {
    if (s == kSaveAt) {
      const std::string saved = scheduler->state_dict().dump();
      optimizer = make_adamw({1e-3, 4e-4});
      scheduler = create_deepspeed_scheduler(c.type, c.params, optimizer);
      scheduler->load_state_dict(json::parse(saved));
      EXPECT_EQ(group_lrs(*optimizer), group_lrs(*reference_opt)) << "right after loading";
    }
    reference->step();
    scheduler->step();
    ASSERT_EQ(scheduler->last_epoch(), reference->last_epoch());
    ASSERT_EQ(group_lrs(*optimizer), group_lrs(*reference_opt)) << "step " << s;
    ASSERT_EQ(betas(*optimizer, 1), betas(*reference_opt, 1)) << "step " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, DeepSpeedSchedulerResumeTest,
    ::testing::Values(
        ResumeCase{"WarmupLR", {{"warmup_num_steps", 20}}},
        ResumeCase{"WarmupDecayLR",
                   {{"total_num_steps", 25}, {"warmup_num_steps", 5}, {"warmup_max_lr", 3e-4}}},
        ResumeCase{"WarmupCosineLR",
                   {{"total_num_steps", 25}, {"warmup_num_steps", 5}, {"warmup_type", "linear"}}},
        ResumeCase{"OneCycle",
                   {{"cycle_min_lr", 1e-5},
                    {"cycle_max_lr", 1e-3},
                    {"cycle_first_step_size", 6},
                    {"cycle_second_step_size", 8},
                    {"cycle_second_stair_count", 3},
                    {"decay_step_size", 2},
                    {"decay_lr_rate", 0.3},
                    {"decay_mom_rate", 0.05}}}),
    [](const auto& info) { return info.param.type; });

TEST(DeepSpeedSchedulersTest, LoadStateRefusesForeignStates) {
  auto optimizer = make_sgd({1.0});
  auto scheduler =
      create_deepspeed_scheduler("WarmupDecayLR", {{"total_num_steps", 10}}, optimizer);
  scheduler->step();
  const auto before = scheduler->state_dict();
  EXPECT_THAT(
      [&] {
        scheduler->load_state_dict({{"type", "WarmupLR"}, {"last_batch_iteration", 3}});
      },
      ::testing::ThrowsMessage<ArgumentError>(HasSubstr("\"WarmupLR\"")));
  EXPECT_THAT(
      [&] {
        scheduler->load_state_dict({{"last_epoch", 3}, {"base_lrs", {1.0}}});
      },
      ::testing::ThrowsMessage<ArgumentError>(HasSubstr("--lr_scheduler_type")));
  EXPECT_THROW(scheduler->load_state_dict({{"last_batch_iteration", -2}}), ArgumentError);
  // The next step() would overflow it (fuzz/corpus/lr_scheduler_state/deepspeed_max.json).
  EXPECT_THROW(
      scheduler->load_state_dict({{"last_batch_iteration", std::numeric_limits<int64_t>::max()}}),
      ArgumentError);
  EXPECT_EQ(scheduler->state_dict(), before);  // nothing modified
}

// The message of the ArgumentError `create` throws.
template <typename F>
std::string error_of(F&& create) {
  try {
    create();
  } catch (const ArgumentError& e) {
    return e.what();
  }
  return "(no ArgumentError)";
}

TEST(DeepSpeedSchedulersTest, FactoryErrorsNameTheConfigKey) {
  auto optimizer = make_sgd({1.0, 1.0});
  auto create = [&](const std::string& type, const json& params) {
    return error_of([&] { create_deepspeed_scheduler(type, params, optimizer); });
  };
  EXPECT_THAT(create("Cosine", json::object()),
              AllOf(HasSubstr("scheduler.type \"Cosine\""),
                    HasSubstr("WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle")));
  EXPECT_THAT(create("warmuplr", json::object()), HasSubstr("did you mean \"WarmupLR\""));
  EXPECT_THAT(create("LRRangeTest", json::object()), HasSubstr("does not support"));
  EXPECT_THAT(create("WarmupLR", {{"warmup_steps", 10}}),
              AllOf(HasSubstr("scheduler.params.warmup_steps"), HasSubstr("warmup_num_steps")));
  EXPECT_THAT(create("WarmupLR", {{"warmup_num_steps", "10"}}),
              HasSubstr("scheduler.params.warmup_num_steps must be an integer"));
  EXPECT_THAT(create("WarmupLR", {{"warmup_num_steps", 10.0}}),
              HasSubstr("scheduler.params.warmup_num_steps must be an integer"));
  EXPECT_THAT(create("WarmupLR", {{"warmup_num_steps", 0}}),
              HasSubstr("scheduler.params.warmup_num_steps must be a positive integer"));
  EXPECT_THAT(create("WarmupLR", {{"warmup_max_lr", "auto"}}),
              AllOf(HasSubstr("scheduler.params.warmup_max_lr is still \"auto\""),
                    HasSubstr("explicit value")));
  EXPECT_THAT(create("WarmupLR", {{"warmup_min_lr", {0.0, 0.1, 0.2}}}),
              HasSubstr("lists 3 values but the optimizer has 2 param groups"));
  EXPECT_THAT(create("WarmupLR", {{"warmup_type", "cosine"}}),
              HasSubstr("scheduler.params.warmup_type must be \"log\" or \"linear\""));
  EXPECT_THAT(create("WarmupDecayLR", json::object()),
              HasSubstr("scheduler.params.total_num_steps is required"));
  EXPECT_THAT(create("WarmupCosineLR", {{"total_num_steps", 10}, {"warmup_max_lr", 1e-3}}),
              HasSubstr("scheduler.params.warmup_max_lr is not a parameter"));
  EXPECT_THAT(create("OneCycle", {{"cycle_max_lr", 1e-3}}),
              HasSubstr("scheduler.params.cycle_min_lr is required"));
  EXPECT_THAT(create("OneCycle", {{"cycle_min_lr", 0}, {"cycle_max_lr", 1}, {"cycle_momentum", 1}}),
              HasSubstr("scheduler.params.cycle_momentum must be true or false"));
  EXPECT_THAT(
      create("OneCycle", {{"cycle_min_lr", 0}, {"cycle_max_lr", 1}, {"cycle_first_step_size", 0}}),
      HasSubstr("scheduler.params.cycle_first_step_size must be positive"));
  EXPECT_THAT(create("WarmupLR", json::array()),
              HasSubstr("scheduler.params must be a JSON object"));
}

TEST(DeepSpeedSchedulersTest, HfMultiplierIsRefusedClearly) {
  auto scheduler = create_deepspeed_scheduler("WarmupLR", json::object(), make_sgd({1.0}));
  EXPECT_THROW(scheduler->multiplier(0), ArgumentError);
}

}  // namespace deepspeed_schedulers_test
}  // namespace ctrainer
