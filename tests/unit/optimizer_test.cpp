// Optimizer creation (decay-parameter names, two param groups, AdamW/SGD weight-decay numerics)
// and global grad-norm clipping.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/grad_clip.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/optim/optimizer_factory.h>

namespace ctrainer {
namespace optimizer_test {

// A module that is not a torch norm layer, holding one parameter called "weight".
struct Holder : torch::nn::Module {
  explicit Holder(int64_t n) { weight = register_parameter("weight", torch::ones({n})); }
  at::Tensor weight;
};

struct Block : torch::nn::Module {
  Block() {
    fc = register_module("fc", torch::nn::Linear(4, 4));
    ln = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({4})));
  }
  torch::nn::Linear fc{nullptr};
  torch::nn::LayerNorm ln{nullptr};
};

struct Net : torch::nn::Module {
  Net() {
    proj = register_parameter("proj", torch::randn({4, 4}));                  // decay
    out_bias = register_parameter("out_bias", torch::zeros({4}));             // "bias" pattern
    block = register_module("block", std::make_shared<Block>());              // LayerNorm by type
    final_norm = register_module("final_norm", std::make_shared<Holder>(4));  // "_norm."
    norm = register_module("norm", std::make_shared<Holder>(4));              // "(^|.)norm."
    normalizer = register_module("normalizer", std::make_shared<Holder>(4));  // no match: decay
    camel = register_module("LayerNorm", std::make_shared<Holder>(4));    // lower-cased "layernorm"
    rms = register_module("input_RMSNorm", std::make_shared<Holder>(4));  // "rmsnorm"
    gn = register_module("gn", torch::nn::GroupNorm(2, 4));               // GroupNorm by type
    head = register_module("head", torch::nn::Linear(4, 2));
    frozen = register_module("frozen", torch::nn::Linear(4, 4));
    for (auto& p : frozen->parameters()) p.set_requires_grad(false);
  }
  at::Tensor proj, out_bias;
  std::shared_ptr<Block> block;
  std::shared_ptr<Holder> final_norm, norm, normalizer, camel, rms;
  torch::nn::GroupNorm gn{nullptr};
  torch::nn::Linear head{nullptr}, frozen{nullptr};
};

TEST(DecayParameterNames, FollowsHfRules) {
  Net net;
  const std::vector<std::string> expected = {"proj", "block.fc.weight", "normalizer.weight",
                                             "head.weight", "frozen.weight"};
  EXPECT_EQ(get_decay_parameter_names(net), expected);
}

TEST(DecayParameterNames, PatternsAreHfs) {
  const std::vector<std::string> expected = {"bias", "layernorm", "rmsnorm",
                                             R"((?:^|\.)norm(?:$|\.))", R"(_norm(?:$|\.))"};
  EXPECT_EQ(no_decay_name_patterns(), expected);
}

TEST(DecayParameterNames, NestedNormLayerExcludesItsWholeSubtree) {
  struct Wrapper : torch::nn::Module {
    Wrapper() {
      inner = register_module("inner", torch::nn::LayerNorm(torch::nn::LayerNormOptions({3})));
    }
    torch::nn::LayerNorm inner{nullptr};
  };
  struct Top : torch::nn::Module {
    Top() {
      w = register_module("w", std::make_shared<Wrapper>());
      lin = register_module("lin", torch::nn::Linear(3, 3));
    }
    std::shared_ptr<Wrapper> w;
    torch::nn::Linear lin{nullptr};
  };
  Top top;
  EXPECT_EQ(get_decay_parameter_names(top), (std::vector<std::string>{"lin.weight"}));
}

TrainingArguments make_args(OptimizerName optim) {
  TrainingArguments args;
  args.optim = optim;
  args.learning_rate = 0.1;
  args.weight_decay = 0.5;
  args.adam_beta1 = 0.8;
  args.adam_beta2 = 0.99;
  args.adam_epsilon = 1e-6;
  return args;
}

// Sets every trainable parameter's gradient to zeros and returns copies of all parameters.
std::vector<std::pair<std::string, at::Tensor>> zero_grads_and_snapshot(torch::nn::Module& m) {
  std::vector<std::pair<std::string, at::Tensor>> snap;
  for (auto& p : m.named_parameters()) {
    if (p.value().requires_grad()) p.value().mutable_grad() = torch::zeros_like(p.value());
    snap.emplace_back(p.key(), p.value().detach().clone());
  }
  return snap;
}

// With zero gradients one step must shrink exactly the decay parameters by (1 - lr*wd) and
// leave every other parameter bit-for-bit unchanged.
void check_decay_step(OptimizerName optim) {
  torch::manual_seed(0);
  Net net;
  // Non-trivial values for every parameter (LayerNorm starts at ones/zeros).
  {
    torch::NoGradGuard ng;
    for (auto& p : net.parameters()) p.uniform_(-1.0, 1.0);
  }
  const auto args = make_args(optim);
  auto opt = create_optimizer(args, net);
  const auto names = get_decay_parameter_names(net);
  const std::set<std::string> decay(names.begin(), names.end());
  const auto before = zero_grads_and_snapshot(net);
  opt->step();
  const auto params = net.named_parameters();
  const double factor = 1.0 - args.learning_rate * args.weight_decay;
  for (const auto& [name, old] : before) {
    const at::Tensor now = params[name];
    const bool decays = decay.count(name) != 0 && now.requires_grad();
    if (decays) {
      EXPECT_TRUE(torch::allclose(now, old * factor, /*rtol=*/1e-6, /*atol=*/1e-7))
          << to_string(optim) << ": " << name << " should shrink by " << factor;
      EXPECT_FALSE(torch::equal(now, old)) << name;
    } else {
      EXPECT_TRUE(torch::equal(now, old)) << to_string(optim) << ": " << name << " must not change";
    }
  }
}

TEST(CreateOptimizer, AdamWDecaysOnlyDecayParams) {
  check_decay_step(OptimizerName::kAdamWTorch);
}
TEST(CreateOptimizer, FusedAdamWDecaysOnlyDecayParams) {
  check_decay_step(OptimizerName::kAdamWTorchFused);
}
TEST(CreateOptimizer, AdamWHfAlias) {
  check_decay_step(OptimizerName::kAdamWHf);
}
TEST(CreateOptimizer, SgdDecaysOnlyDecayParams) {
  check_decay_step(OptimizerName::kSgd);
}

TEST(CreateOptimizer, AdamWGroupsAndOptions) {
  Net net;
  const auto args = make_args(OptimizerName::kAdamWTorch);
  auto opt = create_optimizer(args, net);
  auto* adamw = dynamic_cast<torch::optim::AdamW*>(opt.get());
  ASSERT_NE(adamw, nullptr);
  auto& groups = opt->param_groups();
  ASSERT_EQ(groups.size(), 2u);
  // Decay group: proj, block.fc.weight, normalizer.weight, head.weight (frozen.weight skipped).
  EXPECT_EQ(groups[0].params().size(), 4u);
  // No-decay: out_bias, fc.bias, ln.{weight,bias}, 4 Holder weights, gn.{weight,bias}, head.bias.
  EXPECT_EQ(groups[1].params().size(), 11u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(groups[i].options());
    EXPECT_EQ(o.lr(), 0.1);
    EXPECT_EQ(std::get<0>(o.betas()), 0.8);
    EXPECT_EQ(std::get<1>(o.betas()), 0.99);
    EXPECT_EQ(o.eps(), 1e-6);
    EXPECT_EQ(o.weight_decay(), i == 0 ? 0.5 : 0.0);
  }
  for (const auto& p : net.frozen->parameters()) {
    for (const auto& g : groups) {
      for (const auto& q : g.params()) EXPECT_FALSE(q.is_same(p));
    }
  }
  EXPECT_EQ(opt->defaults().get_lr(), 0.1);
}

TEST(CreateOptimizer, GroupWeightDecaysSurviveTorchsMergeWithTheDefaults) {
  // torch >= 2.12 treats a group option equal to its constructor default as unset and takes
  // the optimizer default instead: each group must still end with exactly its own decay, also
  // when args.weight_decay equals torch's default (AdamW 0.01, SGD 0) or the other group's 0.
  for (const OptimizerName optim : {OptimizerName::kAdamWTorch, OptimizerName::kSgd}) {
    for (double decay : {0.0, 0.01, 0.5}) {
      Net net;
      auto args = make_args(optim);
      args.weight_decay = decay;
      auto opt = create_optimizer(args, net);
      ASSERT_EQ(opt->param_groups().size(), 2u);
      auto group_decay = [&](size_t i) {
        const auto& o = opt->param_groups()[i].options();
        return optim == OptimizerName::kSgd
                   ? static_cast<const torch::optim::SGDOptions&>(o).weight_decay()
                   : static_cast<const torch::optim::AdamWOptions&>(o).weight_decay();
      };
      EXPECT_EQ(group_decay(0), decay) << to_string(optim) << " decay " << decay;
      EXPECT_EQ(group_decay(1), 0.0) << to_string(optim) << " decay " << decay;
    }
  }
}

TEST(CreateOptimizer, SgdUsesTorchDefaults) {
  Net net;
  auto opt = create_optimizer(make_args(OptimizerName::kSgd), net);
  ASSERT_NE(dynamic_cast<torch::optim::SGD*>(opt.get()), nullptr);
  ASSERT_EQ(opt->param_groups().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(opt->param_groups()[i].options());
    EXPECT_EQ(o.lr(), 0.1);
    EXPECT_EQ(o.momentum(), 0.0);
    EXPECT_EQ(o.dampening(), 0.0);
    EXPECT_FALSE(o.nesterov());
    EXPECT_EQ(o.weight_decay(), i == 0 ? 0.5 : 0.0);
  }
}

TEST(CreateOptimizer, EmptyGroupIsOmitted) {
  struct OnlyNorm : torch::nn::Module {
    OnlyNorm() {
      ln = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({4})));
    }
    torch::nn::LayerNorm ln{nullptr};
  };
  OnlyNorm only_norm;  // no decay parameter at all
  auto opt = create_optimizer(make_args(OptimizerName::kAdamWTorch), only_norm);
  ASSERT_EQ(opt->param_groups().size(), 1u);
  EXPECT_EQ(opt->param_groups()[0].params().size(), 2u);
  EXPECT_EQ(static_cast<const torch::optim::AdamWOptions&>(opt->param_groups()[0].options())
                .weight_decay(),
            0.0);

  torch::nn::Linear no_bias(torch::nn::LinearOptions(4, 4).bias(false));  // decay only
  opt = create_optimizer(make_args(OptimizerName::kSgd), *no_bias);
  ASSERT_EQ(opt->param_groups().size(), 1u);
  EXPECT_EQ(
      static_cast<const torch::optim::SGDOptions&>(opt->param_groups()[0].options()).weight_decay(),
      0.5);
}

TEST(DecayParameterNames, RootModuleTypeIsNotChecked) {
  // As in HF, only child modules are checked against the norm-layer types: a bare LayerNorm
  // passed as the model keeps weight decay on its weight (its bias is caught by the pattern).
  torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({4}));
  EXPECT_EQ(get_decay_parameter_names(*ln), (std::vector<std::string>{"weight"}));
}

TEST(CreateOptimizer, Errors) {
  Net net;
  // Names reach create_optimizer only through the parse function, which refuses HF optimizers
  // not built yet and typos; a value cast from an integer is refused by create_optimizer.
  EXPECT_THROW(create_optimizer(make_args(parse_choice<OptimizerName>("adafactor", "optim")), net),
               NotSupportedYet);
  try {
    create_optimizer(make_args(parse_choice<OptimizerName>("adamw_troch", "optim")), net);
    FAIL() << "expected ArgumentError";
  } catch (const NotSupportedYet&) {
    FAIL() << "a typo is not 'not supported yet'";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("adamw_torch"), std::string::npos) << e.what();
  }
  EXPECT_THROW(create_optimizer(make_args(static_cast<OptimizerName>(9)), net), ArgumentError);
  auto args = make_args(OptimizerName::kAdamWTorch);
  args.adam_beta2 = 1.0;
  EXPECT_THROW(create_optimizer(args, net), ArgumentError);
  args = make_args(OptimizerName::kSgd);
  args.weight_decay = -0.1;
  EXPECT_THROW(create_optimizer(args, net), ArgumentError);

  torch::nn::Linear frozen(2, 2);
  for (auto& p : frozen->parameters()) p.set_requires_grad(false);
  EXPECT_THROW(create_optimizer(make_args(OptimizerName::kAdamWTorch), *frozen), ArgumentError);
}

// ---- clip_grad_norm_ ------------------------------------------------------------------------

at::Tensor param_with_grad(std::vector<float> grad) {
  auto p = torch::zeros({static_cast<int64_t>(grad.size())}, torch::requires_grad());
  p.mutable_grad() = torch::tensor(grad);
  return p;
}

TEST(ClipGradNorm, ClosedForm) {
  auto a = param_with_grad({3.f, 4.f});
  auto b = param_with_grad({12.f});
  auto no_grad = torch::zeros({5}, torch::requires_grad());  // skipped
  const at::Tensor norm = clip_grad_norm_({a, no_grad, b}, 1.0);
  EXPECT_EQ(norm.dim(), 0);
  EXPECT_EQ(norm.scalar_type(), at::kFloat);
  EXPECT_NEAR(norm.item<double>(), 13.0, 1e-6);
  const double coef = 1.0 / (13.0 + 1e-6);
  EXPECT_TRUE(torch::allclose(a.grad(), torch::tensor({3.f, 4.f}) * coef, 1e-6, 0));
  EXPECT_TRUE(torch::allclose(b.grad(), torch::tensor({12.f}) * coef, 1e-6, 0));
  EXPECT_FALSE(no_grad.grad().defined());
  // The clipped gradients now have norm ~1.
  EXPECT_NEAR(torch::cat({a.grad(), b.grad()}).norm().item<double>(), 1.0, 1e-5);
}

TEST(ClipGradNorm, NoClippingBelowMaxNorm) {
  auto a = param_with_grad({3.f, 4.f});
  auto b = param_with_grad({12.f});
  const at::Tensor norm = clip_grad_norm_({a, b}, 20.0);
  EXPECT_NEAR(norm.item<double>(), 13.0, 1e-6);
  EXPECT_TRUE(torch::equal(a.grad(), torch::tensor({3.f, 4.f})));
  EXPECT_TRUE(torch::equal(b.grad(), torch::tensor({12.f})));
}

TEST(ClipGradNorm, NonPositiveMaxNormOnlyMeasures) {
  auto a = param_with_grad({3.f, 4.f});
  EXPECT_NEAR(clip_grad_norm_({a}, 0.0).item<double>(), 5.0, 1e-6);
  EXPECT_NEAR(clip_grad_norm_({a}, -1.0).item<double>(), 5.0, 1e-6);
  EXPECT_TRUE(torch::equal(a.grad(), torch::tensor({3.f, 4.f})));
}

TEST(ClipGradNorm, NoGradientsGivesZero) {
  auto p = torch::zeros({3}, torch::requires_grad());
  const at::Tensor norm = clip_grad_norm_({p}, 1.0);
  EXPECT_EQ(norm.item<double>(), 0.0);
  EXPECT_EQ(clip_grad_norm_({}, 1.0).item<double>(), 0.0);
}

TEST(ClipGradNorm, MatchesTorch) {
  torch::manual_seed(3);
  std::vector<at::Tensor> ours, theirs;
  for (auto shape : {std::vector<int64_t>{7, 5}, {11}, {2, 3, 4}}) {
    auto g = torch::randn(shape) * 3.0;
    auto p1 = torch::zeros(shape, torch::requires_grad());
    auto p2 = torch::zeros(shape, torch::requires_grad());
    p1.mutable_grad() = g.clone();
    p2.mutable_grad() = g.clone();
    ours.push_back(p1);
    theirs.push_back(p2);
  }
  for (double max_norm : {0.5, 1e6}) {
    const double expected = torch::nn::utils::clip_grad_norm_(theirs, max_norm);
    const double got = clip_grad_norm_(ours, max_norm).item<double>();
    EXPECT_NEAR(got, expected, 1e-5 * expected) << "max_norm " << max_norm;
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_TRUE(torch::allclose(ours[i].grad(), theirs[i].grad(), 1e-6, 1e-7)) << i;
    }
  }
}

TEST(ClipGradNorm, ReducedPrecisionGradsAccumulateInFloat) {
  // 300 * 300 overflows float16's max (65504) if summed in half precision.
  auto p = torch::zeros({2}, torch::requires_grad());
  p.mutable_grad() = torch::full({2}, 300.0, torch::kHalf);
  auto q = torch::zeros({2}, torch::requires_grad());
  q.mutable_grad() = torch::full({2}, 300.0, torch::kBFloat16);
  const at::Tensor norm = clip_grad_norm_({p, q}, 1.0);
  EXPECT_EQ(norm.scalar_type(), at::kFloat);
  EXPECT_NEAR(norm.item<double>(), 600.0, 1e-3);
  EXPECT_EQ(p.grad().scalar_type(), at::kHalf);  // scaled in place, dtype kept
  EXPECT_NEAR(p.grad()[0].item<double>(), 0.5, 1e-3);
  EXPECT_NEAR(q.grad()[0].item<double>(), 0.5, 1e-2);
}

TEST(ClipGradNorm, DoubleGradsGiveDoubleNorm) {
  auto p = torch::zeros({2}, torch::dtype(torch::kDouble).requires_grad(true));
  p.mutable_grad() = torch::tensor({3.0, 4.0}, torch::kDouble);
  const at::Tensor norm = clip_grad_norm_({p}, 1.0);
  EXPECT_EQ(norm.scalar_type(), at::kDouble);
  EXPECT_DOUBLE_EQ(norm.item<double>(), 5.0);
  EXPECT_NEAR(p.grad()[0].item<double>(), 3.0 / (5.0 + 1e-6), 1e-15);
}

}  // namespace optimizer_test
}  // namespace ctrainer
