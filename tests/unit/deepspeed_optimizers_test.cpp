// DeepSpeed optimizers (trainer/optim/deepspeed_optimizers.h): one step of each with known
// gradients against the closed-form first Adam / SGD step, DeepSpeed's defaults, HF's single
// param group, and the config errors.
#include <cmath>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/optim/deepspeed_optimizers.h>
#include <ctrainer/trainer/optim/fused_adamw.h>

namespace ctrainer {
namespace deepspeed_optimizers_test {

using nlohmann::json;
using ::testing::HasSubstr;

// Linear(2, 1) in double precision with weight [0.5, -1.0], bias [0.25] and gradients
// weight [0.2, -0.4], bias [0.1].
struct Fixture {
  torch::nn::Linear model{torch::nn::LinearOptions(2, 1)};
  Fixture() {
    model->to(torch::kFloat64);
    torch::NoGradGuard guard;
    model->weight.copy_(torch::tensor({{0.5, -1.0}}, torch::kFloat64));
    model->bias.copy_(torch::tensor({0.25}, torch::kFloat64));
  }
  void set_grads() {
    model->weight.mutable_grad() = torch::tensor({{0.2, -0.4}}, torch::kFloat64);
    model->bias.mutable_grad() = torch::tensor({0.1}, torch::kFloat64);
  }
  std::vector<double> values() const {
    return {model->weight[0][0].item<double>(), model->weight[0][1].item<double>(),
            model->bias[0].item<double>()};
  }
};

const std::vector<double> kParams = {0.5, -1.0, 0.25};
const std::vector<double> kGrads = {0.2, -0.4, 0.1};

// The first Adam step moves by lr * g_hat / (|g_hat| + eps) (bias-corrected moments are g and
// g^2); AdamW first scales the parameter by (1 - lr * wd), Adam's L2 adds wd * p to g.
std::vector<double> first_adam_step(double lr, double eps, double wd, bool decoupled) {
  std::vector<double> out;
  for (size_t i = 0; i < kParams.size(); ++i) {
    double p = kParams[i];
    double g = kGrads[i];
    if (decoupled) {
      p *= 1.0 - lr * wd;
    } else {
      g += wd * kParams[i];
    }
    out.push_back(p - lr * g / (std::abs(g) + eps));
  }
  return out;
}

std::vector<double> step_once(const std::string& type, const json& params) {
  Fixture f;
  auto optimizer = create_deepspeed_optimizer(type, params, *f.model);
  f.set_grads();
  optimizer->step();
  return f.values();
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "param " << i;
}

TEST(DeepSpeedOptimizersTest, AdamDefaultsToDecoupledWeightDecay) {
  const json params = {{"lr", 0.01}, {"weight_decay", 0.1}, {"eps", 1e-8}};
  expect_near(step_once("Adam", params), first_adam_step(0.01, 1e-8, 0.1, true));
  expect_near(step_once("AdamW", params), first_adam_step(0.01, 1e-8, 0.1, true));
  // "AdamW" stays decoupled whatever adam_w_mode says (engine.py's effective_adam_w_mode).
  json off = params;
  off["adam_w_mode"] = false;
  expect_near(step_once("AdamW", off), first_adam_step(0.01, 1e-8, 0.1, true));
}

TEST(DeepSpeedOptimizersTest, AdamWModeFalseIsL2) {
  const json params = {{"lr", 0.01}, {"weight_decay", 0.1}, {"adam_w_mode", false}};
  expect_near(step_once("adam", params), first_adam_step(0.01, 1e-8, 0.1, false));
  Fixture f;
  auto optimizer = create_deepspeed_optimizer("Adam", params, *f.model);
  EXPECT_NE(dynamic_cast<torch::optim::Adam*>(optimizer.get()), nullptr);
}

TEST(DeepSpeedOptimizersTest, AdamDefaultsAreFusedAdams) {
  Fixture f;
  auto optimizer = create_deepspeed_optimizer("Adam", json::object(), *f.model);
  // FusedAdam is a fused kernel: FusedAdamW; torch_adam (below) asks for torch's AdamW.
  ASSERT_NE(dynamic_cast<FusedAdamW*>(optimizer.get()), nullptr);
  // One group with every trainable parameter, bias included (HF passes DeepSpeed a flat list).
  ASSERT_EQ(optimizer->param_groups().size(), 1u);
  EXPECT_EQ(optimizer->param_groups()[0].params().size(), 2u);
  auto& o = static_cast<torch::optim::AdamWOptions&>(optimizer->param_groups()[0].options());
  EXPECT_EQ(o.lr(), 1e-3);
  EXPECT_EQ(o.betas(), std::make_tuple(0.9, 0.999));
  EXPECT_EQ(o.eps(), 1e-8);
  EXPECT_EQ(o.weight_decay(), 0.0);  // FusedAdam's default, not torch AdamW's 0.01
  EXPECT_FALSE(o.amsgrad());
  // torch_adam: DeepSpeed builds torch.optim.AdamW itself, with torch's default weight decay.
  auto torch_adamw = create_deepspeed_optimizer("AdamW", {{"torch_adam", true}}, *f.model);
  EXPECT_EQ(dynamic_cast<FusedAdamW*>(torch_adamw.get()), nullptr);
  ASSERT_NE(dynamic_cast<torch::optim::AdamW*>(torch_adamw.get()), nullptr);
  EXPECT_EQ(torch_adamw->param_groups()[0].options().get_lr(), 1e-3);
  EXPECT_EQ(static_cast<torch::optim::AdamWOptions&>(torch_adamw->param_groups()[0].options())
                .weight_decay(),
            0.01);
}

TEST(DeepSpeedOptimizersTest, FrozenParametersAreLeftOut) {
  Fixture f;
  f.model->bias.set_requires_grad(false);
  auto optimizer = create_deepspeed_optimizer("SGD", json::object(), *f.model);
  ASSERT_EQ(optimizer->param_groups().size(), 1u);
  EXPECT_EQ(optimizer->param_groups()[0].params().size(), 1u);
}

TEST(DeepSpeedOptimizersTest, SgdStepMatchesTorch) {
  // First step: buf = g + wd * p; nesterov uses g' + momentum * buf; p -= lr * that.
  const double lr = 0.1, momentum = 0.9, wd = 0.01;
  std::vector<double> plain, nesterov;
  for (size_t i = 0; i < kParams.size(); ++i) {
    const double g = kGrads[i] + wd * kParams[i];
    plain.push_back(kParams[i] - lr * g);
    nesterov.push_back(kParams[i] - lr * (g + momentum * g));
  }
  expect_near(step_once("SGD", {{"lr", lr}, {"momentum", momentum}, {"weight_decay", wd}}), plain);
  expect_near(
      step_once("SGD",
                {{"lr", lr}, {"momentum", momentum}, {"weight_decay", wd}, {"nesterov", true}}),
      nesterov);
  // Defaults: torch.optim.SGD's lr 1e-3 and nothing else.
  std::vector<double> defaults;
  for (size_t i = 0; i < kParams.size(); ++i) defaults.push_back(kParams[i] - 1e-3 * kGrads[i]);
  expect_near(step_once("SGD", json::object()), defaults);
}

std::string error_of(const std::string& type, const json& params) {
  Fixture f;
  try {
    create_deepspeed_optimizer(type, params, *f.model);
  } catch (const ArgumentError& e) {
    return e.what();
  }
  return "(no ArgumentError)";
}

TEST(DeepSpeedOptimizersTest, ErrorsNameTheConfigKey) {
  EXPECT_THAT(error_of("Lamb", json::object()),
              AllOf(HasSubstr("optimizer.type \"Lamb\""), HasSubstr("not support"),
                    HasSubstr("Adam, AdamW or SGD")));
  EXPECT_THAT(error_of("OneBitAdam", json::object()), HasSubstr("does not support"));
  EXPECT_THAT(error_of("RMSprop", json::object()), HasSubstr("not supported by ctrainer"));
  EXPECT_THAT(error_of("sgd", json::object()), HasSubstr("case-sensitive: \"SGD\""));
  EXPECT_THAT(error_of("Adafoo", json::object()), HasSubstr("optimizer.type \"Adafoo\""));
  EXPECT_THAT(error_of("Adam", {{"beta1", 0.9}}),
              AllOf(HasSubstr("optimizer.params.beta1 is not a parameter"), HasSubstr("betas")));
  EXPECT_THAT(error_of("Adam", {{"lr", "auto"}}),
              HasSubstr("optimizer.params.lr is still \"auto\""));
  EXPECT_THAT(error_of("Adam", {{"betas", {0.9}}}),
              HasSubstr("optimizer.params.betas must be a list of 2 numbers"));
  EXPECT_THAT(error_of("Adam", {{"betas", {0.9, 1.5}}}), HasSubstr("optimizer.params.betas"));
  EXPECT_THAT(error_of("Adam", {{"lr", -1.0}}), HasSubstr("optimizer.params.lr = -1"));
  EXPECT_THAT(error_of("Adam", {{"max_grad_norm", 1.0}}), HasSubstr("gradient_clipping"));
  EXPECT_THAT(error_of("Adam", {{"amsgrad", true}}), HasSubstr("torch_adam"));
  EXPECT_EQ(error_of("Adam", {{"amsgrad", true}, {"torch_adam", true}}), "(no ArgumentError)");
  EXPECT_THAT(error_of("Adam", {{"bias_correction", false}}),
              HasSubstr("optimizer.params.bias_correction"));
  EXPECT_THAT(error_of("SGD", {{"nesterov", true}}), HasSubstr("optimizer.params.nesterov"));
  EXPECT_THAT(error_of("SGD", {{"momentum", "0.9"}}),
              HasSubstr("optimizer.params.momentum must be a number"));
}

}  // namespace deepspeed_optimizers_test
}  // namespace ctrainer
