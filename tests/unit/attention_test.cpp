// models/attention.h: SDPA where it is used, and on the CPU with dropout in training the explicit
// path, whose probabilities must be SDPA's with each element kept (scaled by 1 / (1 - p)) or
// dropped, the causal future never attended and boolean masks read as SDPA reads them.
#include <gtest/gtest.h>

#include <limits>

#include <torch/torch.h>

#include <ctrainer/models/attention.h>

namespace ctrainer {
namespace attention_test {

constexpr int64_t kLength = 48;

struct Inputs {
  at::Tensor q, k, v;
};

Inputs inputs() {
  torch::manual_seed(0);
  // v = identity: the output rows are the (dropped) attention probabilities themselves.
  return {torch::randn({2, 3, kLength, 8}), torch::randn({2, 3, kLength, 8}),
          torch::eye(kLength).expand({2, 3, kLength, kLength}).contiguous()};
}

TEST(Attention, WithoutDropoutItIsSdpa) {
  const Inputs in = inputs();
  const at::Tensor reference = at::scaled_dot_product_attention(in.q, in.k, in.v, {}, 0.0, true);
  EXPECT_TRUE(
      torch::equal(attention(in.q, in.k, in.v, {}, 0.1, /*training=*/false, true), reference));
  EXPECT_TRUE(
      torch::equal(attention(in.q, in.k, in.v, {}, 0.0, /*training=*/true, true), reference));
}

TEST(Attention, DropoutKeepsOrDropsEachCausalProbability) {
  const Inputs in = inputs();
  const double p = 0.25;
  const at::Tensor probs = at::scaled_dot_product_attention(in.q, in.k, in.v, {}, 0.0, true);
  torch::manual_seed(5);
  const at::Tensor dropped = attention(in.q, in.k, in.v, {}, p, /*training=*/true, true);
  const at::Tensor kept = dropped != 0;
  // Kept elements are SDPA's probabilities scaled by 1 / (1 - p).
  EXPECT_TRUE(torch::allclose(dropped.masked_select(kept), probs.masked_select(kept) / (1 - p),
                              1e-5, 1e-7));
  // Nothing in the future; about p of the past dropped.
  const at::Tensor future = torch::ones({kLength, kLength}, torch::kBool).triu(1);
  EXPECT_EQ(dropped.masked_select(future.expand_as(dropped)).abs().max().item<float>(), 0.0f);
  const double past = 2 * 3 * kLength * (kLength + 1) / 2.0;
  const double dropped_share =
      1.0 - kept.logical_and(future.logical_not()).sum().item<double>() / past;
  EXPECT_NEAR(dropped_share, p, 0.03);
}

TEST(Attention, ABooleanMaskActsAsItsAdditiveForm) {
  const Inputs in = inputs();
  const at::Tensor allowed = torch::rand({2, 1, kLength, kLength}) > 0.3;
  allowed.diagonal(0, -2, -1).fill_(true);  // no row masked entirely
  const at::Tensor additive =
      torch::zeros({2, 1, kLength, kLength})
          .masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  torch::manual_seed(9);
  const at::Tensor from_bool = attention(in.q, in.k, in.v, allowed, 0.2, true, false);
  torch::manual_seed(9);
  const at::Tensor from_additive = attention(in.q, in.k, in.v, additive, 0.2, true, false);
  EXPECT_TRUE(torch::allclose(from_bool, from_additive, 1e-6, 1e-8));
  EXPECT_EQ(
      from_bool.masked_select(allowed.logical_not().expand_as(from_bool)).abs().max().item<float>(),
      0.0f);
}

}  // namespace attention_test
}  // namespace ctrainer
