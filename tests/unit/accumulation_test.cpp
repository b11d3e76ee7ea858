// Gradient accumulation: k micro-batches of b give the same update as one batch of k*b,
// including a short (and a ragged) last window of an epoch.
#include <gtest/gtest.h>

#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/trainer.h>

#include "support/test_data.h"

namespace ctrainer {
namespace accumulation_test {

std::vector<at::Tensor> train_and_get_params(int64_t n_examples, int64_t batch,
                                             int64_t accumulation, OptimizerName optim,
                                             int64_t epochs = 2) {
  auto data = testing::make_blobs_dataset(n_examples, 6, 3);
  auto args = testing::quiet_args("accum");
  args.per_device_train_batch_size = batch;
  args.gradient_accumulation_steps = accumulation;
  args.num_train_epochs = static_cast<double>(epochs);
  args.learning_rate = 1e-2;
  args.weight_decay = 0.01;
  args.optim = optim;
  args.warmup_steps = 1;
  args.max_grad_norm = 1.0;
  torch::manual_seed(11);
  auto model = std::make_shared<MLPClassifier>(6, 16, 2, /*dropout=*/0.0, /*num_hidden_layers=*/2);
  Trainer trainer(model, args, {.train_dataset = data});
  trainer.train();
  std::vector<at::Tensor> params;
  for (const auto& p : model->parameters()) params.push_back(p.detach().clone());
  return params;
}

void expect_params_near(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b,
                        double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_LE((a[i] - b[i]).abs().max().item<double>(), tol) << "parameter " << i;
}

TEST(Accumulation, EqualWindowsMatchTheLargeBatch) {
  for (const OptimizerName optim : {OptimizerName::kAdamWTorch, OptimizerName::kSgd}) {
    auto reference = train_and_get_params(32, 8, 1, optim);
    expect_params_near(train_and_get_params(32, 4, 2, optim), reference, 1e-6);
    expect_params_near(train_and_get_params(32, 2, 4, optim), reference, 1e-6);
  }
}

TEST(Accumulation, ShortLastWindowMatchesTheShortLastBatch) {
  // 20 examples: batch 8 -> 8, 8, 4; batch 4 x 2 -> (4,4) (4,4) (4); batch 2 x 4 -> ... (2,2).
  auto reference = train_and_get_params(20, 8, 1, OptimizerName::kAdamWTorch);
  expect_params_near(train_and_get_params(20, 4, 2, OptimizerName::kAdamWTorch), reference, 1e-6);
  expect_params_near(train_and_get_params(20, 2, 4, OptimizerName::kAdamWTorch), reference, 1e-6);
}

TEST(Accumulation, RaggedLastWindowIsWeightedByExamples) {
  // 19 examples: batch 8 -> 8, 8, 3; batch 2 x 4 -> last window (2, 1): the 1-example batch
  // must count half as much as the 2-example one for the update to equal the 3-example batch.
  auto reference = train_and_get_params(19, 8, 1, OptimizerName::kSgd);
  expect_params_near(train_and_get_params(19, 2, 4, OptimizerName::kSgd), reference, 1e-6);
  expect_params_near(train_and_get_params(19, 4, 2, OptimizerName::kSgd), reference, 1e-6);
}

TEST(Accumulation, DifferentWindowsReallyDiffer) {
  // Guards the tests above: accumulation 2 with batch 8 is a different run than batch 8.
  auto a = train_and_get_params(32, 8, 1, OptimizerName::kSgd);
  auto b = train_and_get_params(32, 8, 2, OptimizerName::kSgd);
  double max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    max_diff = std::max(max_diff, (a[i] - b[i]).abs().max().item<double>());
  EXPECT_GT(max_diff, 1e-4);
}

}  // namespace accumulation_test
}  // namespace ctrainer
