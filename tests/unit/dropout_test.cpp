// ctrainer::dropout (counter-based CPU mask): the keep rate and the 1/(1-p) scale, an unbiased
// mean, the backward equal to the forward's mask, determinism under the default generator's
// seed and independence from the thread count, the degenerate p, the dtypes, and BERT's
// attention training path equal to its formula with the same mask.
#include <cmath>

#include <gtest/gtest.h>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <ctrainer/models/bert/bert_attention.h>
#include <ctrainer/models/dropout.h>

namespace ctrainer {
namespace dropout_test {

TEST(Dropout, KeepsOneMinusPScaledByItsInverse) {
  for (const double p : {0.1, 0.5, 0.9}) {
    torch::manual_seed(1);
    const int64_t n = 1 << 20;
    const at::Tensor x = torch::ones({n});
    const at::Tensor y = ctrainer::dropout(x, p, true);
    const at::Tensor kept = y.ne(0);
    // Every kept element is exactly 1 / (1 - p) (in float), every other exactly 0.
    EXPECT_TRUE(torch::equal(y.masked_select(kept),
                             torch::full({kept.sum().item<int64_t>()}, 1.0f / float(1.0 - p))));
    // The kept count is Binomial(n, 1 - p): within 5 standard deviations.
    const double keep_rate = kept.to(at::kDouble).mean().item<double>();
    const double sigma = std::sqrt(p * (1 - p) / static_cast<double>(n));
    EXPECT_NEAR(keep_rate, 1.0 - p, 5 * sigma) << "p=" << p;
    // Unbiased: the mean of the output estimates the input's.
    EXPECT_NEAR(y.to(at::kDouble).mean().item<double>(), 1.0, 5 * sigma / (1 - p)) << "p=" << p;
  }
}

TEST(Dropout, NeighbouringElementsAreIndependent) {
  // Element pairs share one 64-bit draw: their two halves must not be correlated.
  torch::manual_seed(2);
  const at::Tensor kept = ctrainer::dropout(torch::ones({1 << 20}), 0.5, true).ne(0).to(at::kDouble);
  const at::Tensor even = kept.slice(0, 0, kept.size(0), 2);
  const at::Tensor odd = kept.slice(0, 1, kept.size(0), 2);
  const double both = (even * odd).mean().item<double>();
  EXPECT_NEAR(both, 0.25, 5 * std::sqrt(0.25 * 0.75 / static_cast<double>(even.size(0))));
}

TEST(Dropout, BackwardUsesTheForwardMask) {
  torch::manual_seed(3);
  const at::Tensor x = torch::randn({37, 129}, torch::requires_grad());
  const at::Tensor y = ctrainer::dropout(x, 0.3, true);
  const at::Tensor upstream = torch::randn({37, 129});
  y.backward(upstream);
  const at::Tensor mask = y.ne(0).to(at::kFloat);
  EXPECT_TRUE(torch::allclose(x.grad(), upstream * mask / 0.7f, 1e-6, 1e-7));
  EXPECT_TRUE(torch::allclose(y, x.detach() * mask / 0.7f, 1e-6, 1e-7));
  EXPECT_GT(mask.sum().item<double>(), 0);
  EXPECT_LT(mask.sum().item<double>(), static_cast<double>(x.numel()));
}

TEST(Dropout, SeedDeterminesTheMaskWhateverTheThreads) {
  const at::Tensor x = torch::randn({3, 50001});  // odd size: a final unpaired element
  const int threads = at::get_num_threads();
  torch::manual_seed(4);
  at::set_num_threads(1);
  const at::Tensor one_thread = ctrainer::dropout(x, 0.2, true);
  const at::Tensor next_call = ctrainer::dropout(x, 0.2, true);
  torch::manual_seed(4);
  at::set_num_threads(std::max(threads, 2));
  const at::Tensor more_threads = ctrainer::dropout(x, 0.2, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one_thread, more_threads));
  EXPECT_FALSE(torch::equal(one_thread, next_call));  // each call draws a fresh seed
}

TEST(Dropout, EvaluationAndDegenerateProbabilities) {
  const at::Tensor x = torch::randn({4, 5});
  EXPECT_TRUE(ctrainer::dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(ctrainer::dropout(x, 0.0, true).is_same(x));
  EXPECT_TRUE(torch::equal(ctrainer::dropout(x, 1.0, true), torch::zeros({4, 5})));
  EXPECT_THROW(ctrainer::dropout(x, 1.5, true), c10::Error);
  EXPECT_THROW(ctrainer::dropout(x, -0.1, true), c10::Error);
  EXPECT_THROW(Dropout(2.0), c10::Error);
}

TEST(Dropout, NonContiguousAndReducedPrecisionInputs) {
  torch::manual_seed(5);
  const at::Tensor x = torch::randn({64, 32}).t();  // non-contiguous
  const at::Tensor y = ctrainer::dropout(x, 0.25, true);
  EXPECT_EQ(y.sizes(), x.sizes());
  const at::Tensor kept = y.ne(0);
  EXPECT_TRUE(torch::allclose(y.masked_select(kept), x.masked_select(kept) / 0.75f));
  const at::Tensor b = torch::randn({1000}).to(at::kBFloat16);
  const at::Tensor yb = ctrainer::dropout(b, 0.5, true);
  EXPECT_EQ(yb.scalar_type(), at::kBFloat16);
  const at::Tensor kb = yb.ne(0);
  EXPECT_TRUE(torch::equal(yb.masked_select(kb), (b.masked_select(kb).to(at::kFloat) * 2.0f)
                                                     .to(at::kBFloat16)));
}

TEST(Dropout, ModuleFollowsTrainAndEval) {
  Dropout module(0.5);
  const at::Tensor x = torch::ones({1000});
  module->eval();
  EXPECT_TRUE(torch::equal(module->forward(x), x));
  module->train();
  EXPECT_FALSE(torch::equal(module->forward(x), x));
  EXPECT_TRUE(module->parameters().empty());
  EXPECT_TRUE(module->buffers().empty());
}

// BERT self-attention in training on the CPU: softmax(q k^T / sqrt(d) + mask) with the
// dropout mask the same seed draws, times v; in evaluation the fused SDPA gives the formula
// without dropout.
TEST(Dropout, BertAttentionTrainingPathIsTheFormula) {
  BertConfig config;
  config.hidden_size = 32;
  config.num_attention_heads = 4;
  config.attention_probs_dropout_prob = 0.25;
  torch::manual_seed(6);
  BertSelfAttention attention(config);
  const int64_t batch = 3, length = 7, head_dim = 8;
  const at::Tensor hidden = torch::randn({batch, length, 32});
  at::Tensor mask = torch::zeros({batch, 1, 1, length});
  mask.index_put_({1, 0, 0, torch::indexing::Slice(5, length)}, -1e9);  // padding in example 1
  auto heads = [&](const at::Tensor& x) {
    return x.view({batch, length, 4, head_dim}).permute({0, 2, 1, 3});
  };
  torch::NoGradGuard no_grad;
  const at::Tensor q = heads(attention->query->forward(hidden));
  const at::Tensor k = heads(attention->key->forward(hidden));
  const at::Tensor v = heads(attention->value->forward(hidden));
  const at::Tensor probs =
      torch::softmax(torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(8.0) + mask, -1);
  auto merge = [&](const at::Tensor& context) {
    return context.permute({0, 2, 1, 3}).reshape({batch, length, 32});
  };

  attention->train();
  torch::manual_seed(7);
  const at::Tensor trained = attention->forward(hidden, mask);
  torch::manual_seed(7);
  const at::Tensor pattern = ctrainer::dropout(torch::ones_like(probs), 0.25, true);  // the same draw
  EXPECT_TRUE(torch::allclose(trained, merge(torch::matmul(probs * pattern, v)), 1e-5, 1e-6));

  attention->eval();
  EXPECT_TRUE(torch::allclose(attention->forward(hidden, mask), merge(torch::matmul(probs, v)),
                              1e-5, 1e-6));
}

}  // namespace dropout_test
}  // namespace ctrainer
