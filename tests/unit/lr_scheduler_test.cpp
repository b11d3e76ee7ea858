// LR schedules: each of HF's 7 schedules against a closed form written out here independently,
// read back from a real optimizer's param groups after k step() calls.
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>

namespace ctrainer {
namespace lr_scheduler_test {

constexpr int64_t kWarmup = 10;
constexpr int64_t kTotal = 100;
constexpr double kLrA = 1e-3;  // group 0 and the optimizer's default lr (polynomial's lr_init)
constexpr double kLrB = 4e-4;  // group 1
// Steps: start, inside warm-up, warm-up boundary, middle, end, past the end.
const std::vector<int64_t> kSteps = {0, 3, 10, 55, 100, 130};

// Optimizer with two param groups having different base lrs.
std::shared_ptr<torch::optim::Optimizer> make_adamw() {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{torch::zeros({2}, torch::requires_grad())},
                      std::make_unique<torch::optim::AdamWOptions>(kLrA));
  groups.emplace_back(std::vector<at::Tensor>{torch::zeros({3}, torch::requires_grad())},
                      std::make_unique<torch::optim::AdamWOptions>(kLrB));
  return std::make_shared<torch::optim::AdamW>(std::move(groups), torch::optim::AdamWOptions(kLrA));
}

std::shared_ptr<torch::optim::Optimizer> make_sgd() {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{torch::zeros({2}, torch::requires_grad())},
                      std::make_unique<torch::optim::SGDOptions>(kLrA));
  groups.emplace_back(std::vector<at::Tensor>{torch::zeros({3}, torch::requires_grad())},
                      std::make_unique<torch::optim::SGDOptions>(kLrB));
  return std::make_shared<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(kLrA));
}

// ---- closed forms, written from the formulas' definitions (not from HF's code structure) ----

double ramp(double s, double w) {
  return s / w;
}  // all tests use kWarmup > 0 unless noted

double closed_linear(int64_t s, double w, double t) {
  if (s < w) return ramp(s, w);
  return s >= t ? 0.0 : (t - s) / (t - w);
}

double closed_cosine(int64_t s, double w, double t) {
  if (s < w) return ramp(s, w);
  const double p = (s - w) / (t - w);
  return (1.0 + std::cos(std::numbers::pi * p)) / 2.0;  // half a wave; not clamped past the end
}

double closed_cosine_restarts(int64_t s, double w, double t) {
  if (s < w) return ramp(s, w);
  const double p = (s - w) / (t - w);
  if (p >= 1.0) return 0.0;
  return (1.0 + std::cos(std::numbers::pi * p)) / 2.0;  // one cycle: p mod 1 == p
}

double closed_polynomial(int64_t s, double w, double t, double lr_init) {
  const double lr_end = 1e-7;
  if (s < w) return ramp(s, w);
  if (s > t) return lr_end / lr_init;
  const double lr = lr_end + (lr_init - lr_end) * (t - s) / (t - w);  // power 1
  return lr / lr_init;
}

double closed_constant_with_warmup(int64_t s, double w) {
  return s < w ? ramp(s, w) : 1.0;
}

double closed_inverse_sqrt(int64_t s, double w) {
  if (s < w) return ramp(s, w);
  const double timescale = w > 0 ? w : 10000.0;
  // Continues from 1 at the end of warm-up: sqrt(timescale / (s - w + timescale)).
  return std::sqrt(timescale / (s - w + timescale));
}

using Closed = std::function<double(int64_t)>;

struct Case {
  SchedulerType type;
  Closed closed;
};

std::vector<Case> all_cases() {
  const double w = kWarmup, t = kTotal;
  return {
      {SchedulerType::kLinear, [=](int64_t s) { return closed_linear(s, w, t); }},
      {SchedulerType::kCosine, [=](int64_t s) { return closed_cosine(s, w, t); }},
      {SchedulerType::kCosineWithRestarts,
       [=](int64_t s) { return closed_cosine_restarts(s, w, t); }},
      {SchedulerType::kPolynomial, [=](int64_t s) { return closed_polynomial(s, w, t, kLrA); }},
      {SchedulerType::kConstant, [](int64_t) { return 1.0; }},
      {SchedulerType::kConstantWithWarmup,
       [=](int64_t s) { return closed_constant_with_warmup(s, w); }},
      {SchedulerType::kInverseSqrt, [=](int64_t s) { return closed_inverse_sqrt(s, w); }},
  };
}

void expect_close(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, 1e-12 * std::max(1.0, std::abs(expected))) << what;
}

// Steps a fresh scheduler to each step in kSteps and compares both groups' lrs.
void check_schedule(const Case& c, std::shared_ptr<torch::optim::Optimizer> opt) {
  auto sched = get_scheduler(c.type, opt, kWarmup, kTotal);
  int64_t done = 0;
  for (int64_t target : kSteps) {
    while (done < target) {
      sched->step();
      ++done;
    }
    const std::string what = to_string(c.type) + " at step " + std::to_string(target);
    ASSERT_EQ(sched->last_epoch(), target) << what;
    const double m = c.closed(target);
    const auto& groups = opt->param_groups();
    ASSERT_EQ(groups.size(), 2u);
    expect_close(groups[0].options().get_lr(), kLrA * m, what + " group 0");
    expect_close(groups[1].options().get_lr(), kLrB * m, what + " group 1");
    const auto last = sched->get_last_lr();
    ASSERT_EQ(last.size(), 2u);
    expect_close(last[0], kLrA * m, what + " get_last_lr[0]");
    expect_close(last[1], kLrB * m, what + " get_last_lr[1]");
    expect_close(schedule_multiplier(c.type, target, kWarmup, kTotal, kLrA), m,
                 what + " schedule_multiplier");
  }
}

TEST(LrScheduler, AllSchedulesMatchClosedFormsThroughAdamW) {
  for (const auto& c : all_cases()) check_schedule(c, make_adamw());
}

TEST(LrScheduler, AllSchedulesMatchClosedFormsThroughSgd) {
  for (const auto& c : all_cases()) check_schedule(c, make_sgd());
}

TEST(LrScheduler, SpotValues) {
  // A few hand-computed numbers guard against a closed form and the code sharing a mistake.
  EXPECT_DOUBLE_EQ(schedule_multiplier(SchedulerType::kLinear, 5, 10, 100, kLrA), 0.5);
  EXPECT_DOUBLE_EQ(schedule_multiplier(SchedulerType::kLinear, 55, 10, 100, kLrA), 0.5);
  EXPECT_DOUBLE_EQ(schedule_multiplier(SchedulerType::kCosine, 55, 10, 100, kLrA), 0.5);
  EXPECT_NEAR(schedule_multiplier(SchedulerType::kCosine, 100, 10, 100, kLrA), 0.0, 1e-15);
  EXPECT_DOUBLE_EQ(schedule_multiplier(SchedulerType::kCosineWithRestarts, 55, 10, 100, kLrA), 0.5);
  EXPECT_DOUBLE_EQ(schedule_multiplier(SchedulerType::kInverseSqrt, 40, 10, 100, kLrA),
                   0.5);  // sqrt(10/40)
  EXPECT_DOUBLE_EQ(schedule_multiplier(SchedulerType::kConstantWithWarmup, 2, 8, 100, kLrA), 0.25);
  EXPECT_DOUBLE_EQ(schedule_multiplier(SchedulerType::kPolynomial, 130, 10, 100, 1e-3), 1e-4);
}

TEST(LrScheduler, ZeroWarmup) {
  for (int64_t s : {0, 1, 50, 99, 100}) {
    expect_close(schedule_multiplier(SchedulerType::kLinear, s, 0, 100, kLrA), (100.0 - s) / 100.0,
                 "linear");
    expect_close(schedule_multiplier(SchedulerType::kInverseSqrt, s, 0, 100, kLrA),
                 closed_inverse_sqrt(s, 0.0), "inverse_sqrt");
    expect_close(schedule_multiplier(SchedulerType::kConstantWithWarmup, s, 0, 100, kLrA), 1.0,
                 "cww");
  }
}

TEST(LrScheduler, ConstructionAppliesStepZero) {
  auto opt = make_adamw();
  auto sched =
      get_scheduler(SchedulerType::kLinear, opt, kWarmup, kTotal);  // lambda(0) == 0 with warm-up
  EXPECT_EQ(sched->last_epoch(), 0);
  EXPECT_EQ(opt->param_groups()[0].options().get_lr(), 0.0);
  EXPECT_EQ(sched->base_lrs(), (std::vector<double>{kLrA, kLrB}));
}

TEST(LrScheduler, CustomLambda) {
  auto opt = make_sgd();
  LRScheduler sched(opt, [](int64_t s) { return 1.0 / (1.0 + static_cast<double>(s)); });
  sched.step();
  sched.step();
  expect_close(opt->param_groups()[1].options().get_lr(), kLrB / 3.0, "custom");
}

TEST(LrScheduler, StateDictRoundTrip) {
  auto opt_a = make_adamw();
  auto a = get_scheduler(SchedulerType::kCosine, opt_a, kWarmup, kTotal);
  for (int i = 0; i < 37; ++i) a->step();
  // Through text, as a checkpoint would store it.
  const auto state = nlohmann::json::parse(a->state_dict().dump());
  EXPECT_EQ(state.at("last_epoch").get<int64_t>(), 37);

  auto opt_b = make_adamw();
  auto b = get_scheduler(SchedulerType::kCosine, opt_b, kWarmup, kTotal);
  b->load_state_dict(state);
  EXPECT_EQ(b->last_epoch(), 37);
  EXPECT_EQ(b->base_lrs(), a->base_lrs());
  EXPECT_EQ(b->get_last_lr(), a->get_last_lr());
  for (size_t g = 0; g < 2; ++g) {
    EXPECT_EQ(opt_b->param_groups()[g].options().get_lr(),
              opt_a->param_groups()[g].options().get_lr());
  }
  for (int i = 0; i < 5; ++i) {
    a->step();
    b->step();
    EXPECT_EQ(b->get_last_lr(), a->get_last_lr());
  }
}

TEST(LrScheduler, StateDictRestoresBaseLrsEvenIfOptimizerLrsChanged) {
  // The restored scheduler must use the saved base lrs, not the (already scheduled) current
  // group lrs of the optimizer it is attached to.
  auto opt = make_adamw();
  auto a = get_scheduler(SchedulerType::kLinear, opt, kWarmup, kTotal);
  for (int i = 0; i < 20; ++i) a->step();
  const auto state = a->state_dict();
  auto b = get_scheduler(SchedulerType::kLinear, opt, kWarmup,
                         kTotal);  // captures scheduled lrs as base
  b->load_state_dict(state);
  EXPECT_EQ(b->base_lrs(), (std::vector<double>{kLrA, kLrB}));
  expect_close(opt->param_groups()[0].options().get_lr(), kLrA * 80.0 / 90.0, "restored lr");
}

TEST(LrScheduler, LoadStateDictValidates) {
  auto opt = make_adamw();
  auto sched = get_scheduler(SchedulerType::kLinear, opt, kWarmup, kTotal);
  const auto good = sched->state_dict();

  auto bad = good;
  bad.erase("last_epoch");
  EXPECT_THROW(sched->load_state_dict(bad), ArgumentError);
  bad = good;
  bad["last_epoch"] = -1;
  EXPECT_THROW(sched->load_state_dict(bad), ArgumentError);
  bad = good;
  bad["last_epoch"] = "3";
  EXPECT_THROW(sched->load_state_dict(bad), ArgumentError);
  // The next step() would overflow it (fuzz/corpus/lr_scheduler_state/last_epoch_max.json).
  bad = good;
  bad["last_epoch"] = std::numeric_limits<int64_t>::max();
  EXPECT_THROW(sched->load_state_dict(bad), ArgumentError);
  bad = good;
  bad["base_lrs"] = {1e-3};  // one group, optimizer has two
  try {
    sched->load_state_dict(bad);
    FAIL() << "expected ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("param groups"), std::string::npos) << e.what();
  }
  bad = good;
  bad["base_lrs"] = {1e-3, "x"};
  EXPECT_THROW(sched->load_state_dict(bad), ArgumentError);
  bad = good;
  bad["base_lrs"] = {1e-3, -1.0};
  EXPECT_THROW(sched->load_state_dict(bad), ArgumentError);
  EXPECT_THROW(sched->load_state_dict(nlohmann::json::array()), ArgumentError);
  // A failed load leaves the scheduler untouched.
  EXPECT_EQ(sched->last_epoch(), 0);
  EXPECT_EQ(sched->base_lrs(), (std::vector<double>{kLrA, kLrB}));
}

TEST(LrScheduler, UnknownNameListsValidNames) {
  // A name becomes a SchedulerType through the parse function, which lists the valid names.
  try {
    get_scheduler(parse_choice<SchedulerType>("cosine_annealing", "lr_scheduler_type"),
                  make_adamw(), 0, 10);
    FAIL() << "expected ArgumentError";
  } catch (const ArgumentError& e) {
    const std::string msg = e.what();
    for (const auto& n : choice_names<SchedulerType>()) {
      EXPECT_NE(msg.find(n), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(
      schedule_multiplier(parse_choice<SchedulerType>("nope", "lr_scheduler_type"), 0, 0, 10, 1e-3),
      ArgumentError);
  EXPECT_EQ(choice_names<SchedulerType>().size(), 10u);
  // A value cast from an integer is refused by the schedules themselves.
  EXPECT_THROW(get_scheduler(static_cast<SchedulerType>(10), make_adamw(), 0, 10), ArgumentError);
  EXPECT_THROW(schedule_multiplier(static_cast<SchedulerType>(-1), 0, 0, 10, 1e-3), ArgumentError);
}

TEST(LrScheduler, ScheduleArgumentsChangeTheCurveAsHfsFormulasSay) {
  const nlohmann::json none;
  // warmup_stable_decay: 2 warm-up steps, 3 stable, 4 linear decay steps to 0.25, then 0.25.
  const nlohmann::json wsd = {{"num_decay_steps", 4},
                              {"decay_type", "linear"},
                              {"min_lr_ratio", 0.25},
                              {"num_stable_steps", 3}};
  const std::vector<double> expected = {0.25, 0.625, 1, 1, 1, 1, 0.8125, 0.625, 0.4375, 0.25};
  for (int64_t s = 0; s < 10; ++s)
    EXPECT_DOUBLE_EQ(schedule_multiplier(SchedulerType::kWarmupStableDecay, s, 2, 100, 1e-3, wsd),
                     expected[static_cast<size_t>(s)])
        << "step " << s;
  // cosine_with_min_lr ends at its floor; min_lr is a fraction of the optimizer's lr.
  EXPECT_NEAR(
      schedule_multiplier(SchedulerType::kCosineWithMinLr, 10, 0, 10, 1e-3, {{"min_lr", 1e-4}}),
      0.1, 1e-15);
  // cosine with num_cycles 1 comes back to 1 at the end; the default half wave ends at 0.
  EXPECT_NEAR(schedule_multiplier(SchedulerType::kCosine, 10, 0, 10, 1e-3, {{"num_cycles", 1}}),
              1.0, 1e-15);
  EXPECT_NEAR(schedule_multiplier(SchedulerType::kCosine, 10, 0, 10, 1e-3, none), 0.0, 1e-15);
  // polynomial's lr_end and power: (1e-3 - 1e-4) * 0.5^2 + 1e-4 over 1e-3 half-way.
  EXPECT_DOUBLE_EQ(schedule_multiplier(SchedulerType::kPolynomial, 5, 0, 10, 1e-3,
                                       {{"lr_end", 1e-4}, {"power", 2.0}}),
                   ((1e-3 - 1e-4) * 0.25 + 1e-4) / 1e-3);
}

TEST(LrScheduler, ScheduleArgumentsAScheduleDoesNotTakeAreRefusedByName) {
  const auto refused = [](SchedulerType type, const nlohmann::json& kwargs,
                          const std::string& expected) {
    try {
      get_scheduler(type, make_adamw(), 2, 10, kwargs);
      ADD_FAILURE() << kwargs.dump() << " was accepted";
    } catch (const ArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  refused(SchedulerType::kCosine, {{"min_lr", 1e-5}},
          "\"min_lr\": the cosine schedule takes num_cycles only");
  refused(SchedulerType::kLinear, {{"power", 2}}, "takes no arguments");
  refused(SchedulerType::kCosineWithMinLr, nlohmann::json::object(), "needs min_lr or min_lr_rate");
  refused(SchedulerType::kCosineWithMinLr, nullptr, "needs min_lr or min_lr_rate");  // no kwargs
  refused(SchedulerType::kWarmupStableDecay, nullptr, "needs num_decay_steps");
  refused(SchedulerType::kWarmupStableDecay, {{"decay_type", "linear"}}, "needs num_decay_steps");
  refused(SchedulerType::kWarmupStableDecay, {{"num_decay_steps", 2}, {"warmup_type", "exp"}},
          "\"warmup_type\" must be \"linear\", \"cosine\" or \"1-sqrt\"");
  refused(SchedulerType::kWarmupStableDecay, {{"num_decay_steps", -1}}, "whole number of steps");
  refused(SchedulerType::kCosine, {{"num_cycles", "two"}}, "must be a number");
  // validate() checks them before a Trainer is built.
  TrainingArguments args;
  args.output_dir = "out";
  args.lr_scheduler_type = SchedulerType::kCosine;
  args.lr_scheduler_kwargs = JsonObjectText{R"({"timescale": 5})"};
  EXPECT_THROW(args.validate(), ArgumentError);
  args.lr_scheduler_type = SchedulerType::kInverseSqrt;
  EXPECT_NO_THROW(args.validate());
}

TEST(LrScheduler, PolynomialRefusesLrNotAboveLrEnd) {
  auto opt = std::make_shared<torch::optim::AdamW>(
      std::vector<at::Tensor>{torch::zeros({2}, torch::requires_grad())},
      torch::optim::AdamWOptions(1e-7));
  EXPECT_THROW(get_scheduler(SchedulerType::kPolynomial, opt, 0, 10), ArgumentError);
  EXPECT_THROW(schedule_multiplier(SchedulerType::kPolynomial, 0, 0, 10, 5e-8), ArgumentError);
  EXPECT_NO_THROW(
      get_scheduler(SchedulerType::kLinear, opt, 0, 10));  // only polynomial needs lr_init
}

TEST(LrScheduler, PolynomialWithoutDecayPhaseDoesNotDivideByZero) {
  const double m = schedule_multiplier(SchedulerType::kPolynomial, 10, 10, 10, 1e-3);
  EXPECT_TRUE(std::isfinite(m));
  EXPECT_DOUBLE_EQ(m, 1e-7 / 1e-3);
}

TEST(LrScheduler, RejectsNegativeStepCountsAndNullOptimizer) {
  EXPECT_THROW(get_scheduler(SchedulerType::kLinear, make_adamw(), -1, 10), ArgumentError);
  EXPECT_THROW(get_scheduler(SchedulerType::kLinear, make_adamw(), 0, -10), ArgumentError);
  EXPECT_THROW(get_scheduler(SchedulerType::kLinear, nullptr, 0, 10), ArgumentError);
  EXPECT_THROW(schedule_multiplier(SchedulerType::kLinear, -1, 0, 10, 1e-3), ArgumentError);
}

TEST(LrScheduler, GetWarmupSteps) {
  TrainingArguments args;
  EXPECT_EQ(get_warmup_steps(args, 100), 0);
  args.warmup_ratio = 0.1;
  EXPECT_EQ(get_warmup_steps(args, 95), 10);  // ceil(9.5)
  EXPECT_EQ(get_warmup_steps(args, 100), 10);
  args.warmup_steps = 7;  // explicit steps win over the ratio
  EXPECT_EQ(get_warmup_steps(args, 95), 7);
  // transformers 5: below 1, warmup_steps is itself a ratio (and wins over warmup_ratio).
  args.warmup_steps = 0.05;
  EXPECT_EQ(get_warmup_steps(args, 95), 5);   // ceil(4.75)
  EXPECT_EQ(get_warmup_steps(args, 100), 5);  // ceil(5.0)
  EXPECT_EQ(get_warmup_steps(args, 1000), 50);
  args.warmup_steps = 1;  // 1 is one step, not 100 %
  EXPECT_EQ(get_warmup_steps(args, 1000), 1);
}

}  // namespace lr_scheduler_test
}  // namespace ctrainer
