// token_cross_entropy: the row-chunked cross-entropy of the LM heads gives at::cross_entropy_loss's
// loss and gradient (sum and mean, ignored targets, chunks that do not divide the rows), refuses
// targets outside the vocabulary by name, and leaves what it does not serve to torch.
#include <cmath>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <ctrainer/models/token_cross_entropy.h>

namespace ctrainer {
namespace token_cross_entropy_test {

constexpr int64_t kRows = 37, kVocab = 1001;

struct LossAndGrad {
  at::Tensor loss, grad;
};

template <class Loss>
LossAndGrad loss_and_grad(const at::Tensor& logits, Loss loss_of) {
  at::Tensor leaf = logits.detach().clone().requires_grad_(true);
  at::Tensor loss = loss_of(leaf);
  // A non-unit upstream gradient: the kernel must scale by it.
  (loss * 1.75).backward();
  return {loss.detach(), leaf.grad()};
}

at::Tensor targets_with_ignored(int64_t rows, int64_t vocab) {
  torch::manual_seed(11);
  at::Tensor targets = at::randint(vocab, {rows}, at::kLong);
  targets.index_put_({at::arange(0, rows, 3, at::kLong)}, -100);  // every third row ignored
  return targets;
}

struct Case {
  at::Reduction::Reduction reduction;
  int64_t chunk_rows;  // 0: the default (one chunk for these sizes)
};

class TokenCrossEntropyCases : public ::testing::TestWithParam<Case> {};

TEST_P(TokenCrossEntropyCases, GivesTorchsLossAndGradient) {
  const Case c = GetParam();
  torch::manual_seed(5);
  // Large logits in one row as well: the kernel's softmax must stay stable.
  at::Tensor logits = at::randn({kRows, kVocab}) * 3.0;
  logits[4][7] = 80.0;
  const at::Tensor targets = targets_with_ignored(kRows, kVocab);
  const LossAndGrad ours = loss_and_grad(logits, [&](const at::Tensor& x) {
    return token_cross_entropy(x, targets, c.reduction, -100, c.chunk_rows);
  });
  const LossAndGrad torchs = loss_and_grad(logits, [&](const at::Tensor& x) {
    return at::cross_entropy_loss(x, targets, {}, c.reduction, -100);
  });
  EXPECT_NEAR(ours.loss.item<double>(), torchs.loss.item<double>(),
              1e-6 * std::abs(torchs.loss.item<double>()));
  EXPECT_TRUE(at::allclose(ours.grad, torchs.grad, 1e-5, 1e-8))
      << "largest gradient difference " << (ours.grad - torchs.grad).abs().max().item<double>();
  // Ignored rows get no gradient at all.
  EXPECT_EQ(ours.grad.index({at::arange(0, kRows, 3, at::kLong)}).abs().max().item<float>(), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(
    ReductionsAndChunks, TokenCrossEntropyCases,
    ::testing::Values(Case{at::Reduction::Mean, 0}, Case{at::Reduction::Sum, 0},
                      Case{at::Reduction::Mean, 5}, Case{at::Reduction::Sum, 5},
                      Case{at::Reduction::Mean, 1}, Case{at::Reduction::Sum, kRows + 3}));

TEST(TokenCrossEntropy, AveragesNothingToNaNAndSumsNothingToZero) {
  const at::Tensor logits = at::randn({6, 9});
  const at::Tensor ignored = at::full({6}, -100, at::kLong);
  const LossAndGrad mean = loss_and_grad(logits, [&](const at::Tensor& x) {
    return token_cross_entropy(x, ignored, at::Reduction::Mean, -100, 4);
  });
  EXPECT_TRUE(std::isnan(mean.loss.item<float>()));  // as at::cross_entropy_loss
  EXPECT_EQ(mean.grad.abs().max().item<float>(), 0.0f);
  const LossAndGrad sum = loss_and_grad(logits, [&](const at::Tensor& x) {
    return token_cross_entropy(x, ignored, at::Reduction::Sum, -100, 4);
  });
  EXPECT_EQ(sum.loss.item<float>(), 0.0f);
  EXPECT_EQ(sum.grad.abs().max().item<float>(), 0.0f);
}

TEST(TokenCrossEntropy, NamesATargetOutsideTheVocabulary) {
  const at::Tensor logits = at::randn({3, 9}, at::requires_grad());
  for (const int64_t bad : {9, -2}) {
    const at::Tensor targets = torch::tensor({int64_t{1}, bad, int64_t{-100}});
    try {
      token_cross_entropy(logits, targets, at::Reduction::Mean);
      FAIL() << "target " << bad << " was accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what())
                    .find("target " + std::to_string(bad) + " is out of bounds for 9 classes"),
                std::string::npos)
          << error.what();
    }
  }
}

TEST(TokenCrossEntropy, LeavesHalfPrecisionLogitsToTorch) {
  torch::manual_seed(2);
  const at::Tensor logits = at::randn({8, 33}).to(at::kBFloat16);
  const at::Tensor targets = targets_with_ignored(8, 33);
  const at::Tensor ours = token_cross_entropy(logits, targets, at::Reduction::Mean);
  EXPECT_EQ(ours.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(ours, at::cross_entropy_loss(logits, targets, {}, at::Reduction::Mean)));
}

}  // namespace token_cross_entropy_test
}  // namespace ctrainer
