// Optimizer state as named tensors + JSON: a restored optimizer continues bit-identically to the
// original (AdamW, AdamW with amsgrad, SGD with momentum/Nesterov), through JSON text and tensor
// copies, and mismatched or corrupt states are rejected with messages that name the problem.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <nlohmann/json.hpp>
#include "support/expect_error.h"

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/checkpoint/optimizer_state.h>
#include <ctrainer/trainer/optim/optimizer_factory.h>

namespace ctrainer {
namespace optimizer_state_test {

using nlohmann::json;
using torch::optim::AdamWOptions;
using torch::optim::Optimizer;
using torch::optim::SGDOptions;

// Linear + LayerNorm, plus a Linear that forward() never uses: its parameters get no gradient,
// so the optimizer never creates state for them (the "never stepped" case inside a live state).
struct Net : torch::nn::Module {
  explicit Net(int64_t hidden = 3) {
    fc = register_module("fc", torch::nn::Linear(4, hidden));
    ln = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
    unused = register_module("unused", torch::nn::Linear(2, 2));
  }
  at::Tensor forward(const at::Tensor& x) { return ln(fc(x)); }
  torch::nn::Linear fc{nullptr};
  torch::nn::LayerNorm ln{nullptr};
  torch::nn::Linear unused{nullptr};
};

// Same groups as Net (decay: fc.weight, unused.weight) plus one more decayed weight.
struct WiderNet : Net {
  WiderNet() { extra = register_module("extra", torch::nn::Linear(3, 3)); }
  torch::nn::Linear extra{nullptr};
};

TrainingArguments args_for(OptimizerName optim) {
  TrainingArguments args;
  args.optim = optim;
  args.learning_rate = 1e-2;
  args.weight_decay = 0.1;
  return args;
}

// Hyper-parameters that differ from a fresh create_optimizer, so restoring them is observable;
// the lrs are not exactly representable in decimal and must still come back bit-exact.
void customize(Optimizer& optimizer, bool amsgrad) {
  auto& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const double lr = g == 0 ? 1.0 / 3.0 : 0.1 + 0.2;
    if (auto* o = dynamic_cast<AdamWOptions*>(&groups[g].options())) {
      o->lr(lr).amsgrad(amsgrad).betas(std::make_tuple(0.8, 0.95)).eps(1e-7);
    } else if (auto* s = dynamic_cast<SGDOptions*>(&groups[g].options())) {
      s->lr(lr).momentum(0.9);
      if (g == 1) {
        s->nesterov(true);
      } else {
        s->dampening(0.1);
      }
    }
  }
}

void copy_parameters(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  const auto src = from.parameters();
  auto dst = to.parameters();
  ASSERT_EQ(src.size(), dst.size());
  for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
}

// Forward and backward of `model` on a fixed regression target (varying with `step`).
void backward(Net& model, int64_t step) {
  model.zero_grad();
  const at::Tensor input = torch::linspace(-1.0, 1.0, 20).reshape({5, 4});
  const at::Tensor target = torch::sin(torch::arange(15).reshape({5, 3}).to(torch::kFloat) + step);
  const at::Tensor loss = (model.forward(input) - target).pow(2).mean();
  loss.backward();
}

// Emulates writing to and reading from a file: the tensors are copied into fresh storage and
// the meta goes through JSON text.
OptimizerStateDict through_file(const OptimizerStateDict& state) {
  OptimizerStateDict copy;
  for (const auto& [name, t] : state.tensors) copy.tensors[name] = t.contiguous().clone();
  copy.meta = json::parse(state.meta.dump());
  return copy;
}

void expect_same_state(const Optimizer& a, const Optimizer& b) {
  const OptimizerStateDict sa = optimizer_state_dict(a);
  const OptimizerStateDict sb = optimizer_state_dict(b);
  EXPECT_EQ(sa.meta, sb.meta);  // options, steps, which tensors exist
  ASSERT_EQ(sa.tensors.size(), sb.tensors.size());
  for (const auto& [name, t] : sa.tensors) {
    ASSERT_EQ(sb.tensors.count(name), 1u) << name;
    EXPECT_TRUE(torch::equal(t, sb.tensors.at(name))) << name;
  }
}

void expect_same_parameters(const torch::nn::Module& a, const torch::nn::Module& b) {
  const auto pa = a.named_parameters();
  const auto pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i].value(), pb[i].value())) << pa[i].key();
  }
}

// Trains `n` steps, snapshots through a "file", restores into a fresh model + optimizer, then
// steps both k more times on the same gradients: everything must match bit for bit.
void check_resume(OptimizerName optim, bool amsgrad) {
  torch::manual_seed(7);
  Net original;
  auto opt = create_optimizer(args_for(optim), original);
  ASSERT_EQ(opt->param_groups().size(), 2u);
  customize(*opt, amsgrad);
  for (int64_t s = 0; s < 4; ++s) {
    backward(original, s);
    opt->step();
  }
  const OptimizerStateDict saved = through_file(optimizer_state_dict(*opt));
  // The unused Linear's weight (group 0) and bias (group 1) have no state.
  EXPECT_TRUE(saved.meta["param_groups"][0]["params"][1]["state"].is_null()) << saved.meta;
  EXPECT_FALSE(saved.meta["param_groups"][0]["params"][0]["state"].is_null());

  torch::manual_seed(99);  // different initial weights: everything must come from the checkpoint
  Net restored;
  copy_parameters(original, restored);
  auto opt2 = create_optimizer(args_for(optim), restored);
  load_optimizer_state_dict(*opt2, saved);
  expect_same_state(*opt, *opt2);
  for (size_t g = 0; g < 2; ++g) {
    EXPECT_EQ(opt2->param_groups()[g].options().get_lr(), g == 0 ? 1.0 / 3.0 : 0.1 + 0.2);
  }

  for (int64_t s = 4; s < 8; ++s) {
    backward(original, s);
    // Identical gradients on both sides, whatever the forward pass would have produced.
    {
      torch::NoGradGuard no_grad;
      restored.zero_grad();
      const auto src = original.parameters();
      auto dst = restored.parameters();
      for (size_t i = 0; i < src.size(); ++i) {
        if (src[i].grad().defined()) dst[i].mutable_grad() = src[i].grad().clone();
      }
    }
    opt->step();
    opt2->step();
  }
  expect_same_parameters(original, restored);
  expect_same_state(*opt, *opt2);
  // And the state kept evolving (the comparison is not between two untouched states).
  EXPECT_FALSE(torch::equal(saved.tensors.begin()->second,
                            optimizer_state_dict(*opt2).tensors.at(saved.tensors.begin()->first)));
}

TEST(OptimizerState, AdamWResumesBitIdentically) {
  check_resume(OptimizerName::kAdamWTorch, false);
}
TEST(OptimizerState, AdamWAmsgradResumesBitIdentically) {
  check_resume(OptimizerName::kAdamWTorch, true);
}
TEST(OptimizerState, FusedAdamWResumesBitIdentically) {
  check_resume(OptimizerName::kAdamWTorchFused, false);
}
TEST(OptimizerState, FusedAdamWAmsgradResumesBitIdentically) {
  check_resume(OptimizerName::kAdamWTorchFused, true);
}
TEST(OptimizerState, SgdMomentumResumesBitIdentically) {
  check_resume(OptimizerName::kSgd, false);
}

TEST(OptimizerState, AdamWMetaLayout) {
  torch::manual_seed(1);
  Net model;
  auto opt = create_optimizer(args_for(OptimizerName::kAdamWTorch), model);
  customize(*opt, /*amsgrad=*/true);
  backward(model, 0);
  opt->step();
  opt->step();
  const OptimizerStateDict s = optimizer_state_dict(*opt);
  EXPECT_EQ(s.meta["format_version"], 1);
  EXPECT_EQ(s.meta["optimizer"], "AdamW");
  const json& g0 = s.meta["param_groups"][0];
  EXPECT_EQ(g0["options"]["lr"].get<double>(), 1.0 / 3.0);
  EXPECT_EQ(g0["options"]["betas"], json::array({0.8, 0.95}));
  EXPECT_EQ(g0["options"]["eps"], 1e-7);
  EXPECT_EQ(g0["options"]["weight_decay"], 0.1);
  EXPECT_EQ(g0["options"]["amsgrad"], true);
  EXPECT_EQ(s.meta["param_groups"][1]["options"]["weight_decay"], 0.0);
  const json& fc_weight = g0["params"][0];
  EXPECT_EQ(fc_weight["shape"], json::array({3, 4}));
  EXPECT_EQ(fc_weight["dtype"], "Float");
  EXPECT_EQ(fc_weight["state"]["step"], 2);
  EXPECT_EQ(fc_weight["state"]["tensors"],
            json::array({"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}));
  // decay group: fc.weight, unused.weight; no-decay group: fc.bias, ln.weight, ln.bias,
  // unused.bias. 4 stepped parameters x 3 tensors.
  EXPECT_EQ(s.tensors.size(), 12u);
  ASSERT_EQ(s.tensors.count("state.0.0.exp_avg"), 1u);
  EXPECT_EQ(s.tensors.at("state.0.0.exp_avg").sizes(), model.fc->weight.sizes());
  EXPECT_EQ(s.tensors.count("state.1.2.max_exp_avg_sq"), 1u);  // ln.bias
  EXPECT_EQ(s.tensors.count("state.1.3.exp_avg"), 0u);         // unused.bias
}

TEST(OptimizerState, SgdMetaLayout) {
  torch::manual_seed(1);
  Net model;
  auto opt = create_optimizer(args_for(OptimizerName::kSgd), model);
  customize(*opt, false);
  backward(model, 0);
  opt->step();
  const OptimizerStateDict s = optimizer_state_dict(*opt);
  EXPECT_EQ(s.meta["optimizer"], "SGD");
  const json& o1 = s.meta["param_groups"][1]["options"];
  EXPECT_EQ(o1, (json{{"lr", 0.1 + 0.2},
                      {"momentum", 0.9},
                      {"dampening", 0.0},
                      {"weight_decay", 0.0},
                      {"nesterov", true}}));
  EXPECT_EQ(s.meta["param_groups"][0]["params"][0]["state"],
            (json{{"tensors", json::array({"momentum_buffer"})}}));
  EXPECT_EQ(s.tensors.size(), 4u);
}

TEST(OptimizerState, NeverSteppedStateClearsTarget) {
  torch::manual_seed(3);
  Net fresh_model;
  auto fresh = create_optimizer(args_for(OptimizerName::kAdamWTorch), fresh_model);
  const OptimizerStateDict empty = through_file(optimizer_state_dict(*fresh));
  EXPECT_TRUE(empty.tensors.empty());
  for (const auto& group : empty.meta["param_groups"]) {
    for (const auto& p : group["params"]) EXPECT_TRUE(p["state"].is_null());
  }

  Net model;
  auto opt = create_optimizer(args_for(OptimizerName::kAdamWTorch), model);
  backward(model, 0);
  opt->step();
  ASSERT_FALSE(opt->state().empty());
  load_optimizer_state_dict(*opt, empty);
  EXPECT_TRUE(opt->state().empty());
  expect_same_state(*fresh, *opt);
}

TEST(OptimizerState, LoadCopiesOntoParameterDtypeWithoutAliasing) {
  torch::manual_seed(4);
  Net model;
  auto opt = create_optimizer(args_for(OptimizerName::kAdamWTorch), model);
  backward(model, 0);
  opt->step();
  const OptimizerStateDict saved = through_file(optimizer_state_dict(*opt));

  Net twin;
  twin.to(torch::kFloat64);
  auto opt2 = create_optimizer(args_for(OptimizerName::kAdamWTorch), twin);
  load_optimizer_state_dict(*opt2, saved);
  const OptimizerStateDict loaded = optimizer_state_dict(*opt2);
  const at::Tensor& exp_avg = loaded.tensors.at("state.0.0.exp_avg");
  EXPECT_EQ(exp_avg.scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::equal(exp_avg.to(torch::kFloat), saved.tensors.at("state.0.0.exp_avg")));

  // Stepping the restored optimizer must not write into the caller's tensors.
  const at::Tensor before = saved.tensors.at("state.0.0.exp_avg").clone();
  for (auto& p : twin.parameters()) p.mutable_grad() = torch::ones_like(p);
  opt2->step();
  EXPECT_TRUE(torch::equal(before, saved.tensors.at("state.0.0.exp_avg")));
}

TEST(OptimizerState, AdamIsSupported) {
  torch::manual_seed(5);
  Net a;
  torch::optim::Adam opt(a.parameters(), torch::optim::AdamOptions(0.01).amsgrad(true));
  backward(a, 0);
  opt.step();
  const OptimizerStateDict saved = through_file(optimizer_state_dict(opt));
  EXPECT_EQ(saved.meta["optimizer"], "Adam");
  Net b;
  copy_parameters(a, b);
  torch::optim::Adam opt2(b.parameters(), torch::optim::AdamOptions(0.5));
  load_optimizer_state_dict(opt2, saved);
  expect_same_state(opt, opt2);
}

// ---- mismatches and corrupt states ------------------------------------------------------------

using testing::expect_error;

struct Saved {
  Saved() {
    torch::manual_seed(11);
    opt = create_optimizer(args_for(OptimizerName::kAdamWTorch), model);
    backward(model, 0);
    opt->step();
    state = through_file(optimizer_state_dict(*opt));
  }
  Net model;
  std::shared_ptr<Optimizer> opt;
  OptimizerStateDict state;
};

TEST(OptimizerStateErrors, DifferentGroupCount) {
  Saved s;
  Net other;
  torch::optim::AdamW single(other.parameters(), AdamWOptions(0.1));
  expect_error([&] { load_optimizer_state_dict(single, s.state); },
               {"2 param groups", "optimizer has 1"});
}

TEST(OptimizerStateErrors, DifferentParamCount) {
  Saved s;
  WiderNet wider;
  auto opt = create_optimizer(args_for(OptimizerName::kAdamWTorch), wider);
  expect_error([&] { load_optimizer_state_dict(*opt, s.state); },
               {"param group 0 has 3 parameters", "state has 2"});
}

TEST(OptimizerStateErrors, DifferentShape) {
  Saved s;
  Net wide(/*hidden=*/5);
  auto opt = create_optimizer(args_for(OptimizerName::kAdamWTorch), wide);
  expect_error([&] { load_optimizer_state_dict(*opt, s.state); },
               {"param group 0, parameter 0", "[5, 4]", "[3, 4]"});
}

TEST(OptimizerStateErrors, WrongOptimizerType) {
  Saved s;
  Net other;
  auto sgd = create_optimizer(args_for(OptimizerName::kSgd), other);
  expect_error([&] { load_optimizer_state_dict(*sgd, s.state); }, {"AdamW", "SGD"});
}

TEST(OptimizerStateErrors, UnsupportedOptimizer) {
  Net model;
  torch::optim::RMSprop rmsprop(model.parameters(), torch::optim::RMSpropOptions(0.1));
  expect_error([&] { optimizer_state_dict(rmsprop); }, {"unsupported optimizer type"});
  Saved s;
  expect_error([&] { load_optimizer_state_dict(rmsprop, s.state); },
               {"unsupported optimizer type"});
}

// A failed load must leave the target exactly as it was.
void expect_rejected_without_change(const OptimizerStateDict& bad,
                                    const std::vector<std::string>& parts) {
  torch::manual_seed(12);
  Net model;
  auto opt = create_optimizer(args_for(OptimizerName::kAdamWTorch), model);
  backward(model, 0);
  opt->step();
  const OptimizerStateDict before = through_file(optimizer_state_dict(*opt));
  expect_error([&] { load_optimizer_state_dict(*opt, bad); }, parts);
  const OptimizerStateDict after = optimizer_state_dict(*opt);
  EXPECT_EQ(before.meta, after.meta);
  for (const auto& [name, t] : before.tensors) EXPECT_TRUE(torch::equal(t, after.tensors.at(name)));
}

TEST(OptimizerStateErrors, MissingTensor) {
  Saved s;
  s.state.tensors.erase("state.1.2.exp_avg_sq");
  expect_rejected_without_change(
      s.state, {"missing tensor \"state.1.2.exp_avg_sq\"", "param group 1, parameter 2"});
}

TEST(OptimizerStateErrors, MisshapenTensor) {
  Saved s;
  s.state.tensors["state.0.0.exp_avg"] = torch::zeros({4, 3});
  expect_rejected_without_change(s.state, {"state.0.0.exp_avg", "[4, 3]", "[3, 4]"});
}

TEST(OptimizerStateErrors, UnexpectedTensor) {
  Saved s;
  s.state.tensors["state.0.1.exp_avg"] = torch::zeros({2, 2});  // unused.weight has no state
  expect_rejected_without_change(s.state, {"unexpected tensor \"state.0.1.exp_avg\""});
}

TEST(OptimizerStateErrors, AmsgradWithoutMaxBuffer) {
  Saved s;
  s.state.meta["param_groups"][0]["options"]["amsgrad"] = true;
  expect_rejected_without_change(s.state, {"param group 0, parameter 0", "no \"max_exp_avg_sq\""});
}

TEST(OptimizerStateErrors, UnknownStateName) {
  Saved s;
  s.state.meta["param_groups"][1]["params"][0]["state"]["tensors"].push_back("momentum_buffer");
  expect_rejected_without_change(s.state, {"unknown state tensor \"momentum_buffer\""});
}

TEST(OptimizerStateErrors, MissingOrIllTypedMeta) {
  {
    Saved s;
    s.state.meta["param_groups"][1]["options"].erase("lr");
    expect_rejected_without_change(s.state, {"missing key \"lr\"", "param_groups[1].options"});
  }
  {
    Saved s;
    s.state.meta["param_groups"][0]["options"]["lr"] = "0.1";
    expect_rejected_without_change(s.state, {"\"lr\"", "must be a number"});
  }
  {
    Saved s;
    s.state.meta["param_groups"][0]["options"]["lr"] = -1.0;
    expect_rejected_without_change(s.state, {"\"lr\"", ">= 0"});
  }
  {
    Saved s;
    s.state.meta["param_groups"][0]["params"][0]["state"]["step"] = 1.5;
    expect_rejected_without_change(s.state, {"\"step\"", "integer"});
  }
  {
    // The next step would wrap it negative (fuzz/corpus/optimizer_state/step_max.bin).
    Saved s;
    s.state.meta["param_groups"][0]["params"][0]["state"]["step"] =
        std::numeric_limits<int64_t>::max();
    expect_rejected_without_change(s.state, {"\"step\"", "in [0, 2^53]"});
  }
  {
    Saved s;
    s.state.meta["param_groups"][0]["params"][0].erase("shape");
    expect_rejected_without_change(s.state, {"missing key \"shape\""});
  }
  {
    Saved s;
    s.state.meta["format_version"] = 2;
    expect_rejected_without_change(s.state, {"format_version 2"});
  }
  {
    Saved s;
    s.state.meta = json::object();
    expect_rejected_without_change(s.state, {"missing key \"format_version\""});
  }
}

}  // namespace optimizer_state_test
}  // namespace ctrainer
