// Token-level loss normalisation (HF's num_items_in_batch): a causal LM's loss is the mean over
// the label tokens of the whole accumulation window, so micro-batches of ragged token counts
// give the update of one large batch. The multi-process case (average_tokens_across_devices):
// tests/e2e/trainer_ddp_lm_test.cpp.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <ctrainer/models/llama/llama_heads.h>
#include <ctrainer/models/task_heads.h>
#include <ctrainer/trainer/loss/loss_items.h>
#include <ctrainer/trainer/trainer.h>

#include "support/decoder_batches.h"
#include "support/test_data.h"

namespace ctrainer {
namespace token_level_loss_test {

constexpr int64_t kExamples = 8, kLength = 6;

/// 8 rows whose label tokens (after the shift) number 5, 1, 4, 0, 2, 5, 3, 1: right padding is
/// masked and ignored (-100), and the first half of the rows holds more tokens than the second.
Batch ragged_rows() {
  const at::Tensor lengths = torch::tensor({6, 2, 5, 1, 3, 6, 4, 2}, torch::kLong);
  torch::manual_seed(3);
  const at::Tensor mask = at::arange(kLength, at::kLong).unsqueeze(0).lt(lengths.unsqueeze(1));
  const at::Tensor ids =
      at::randint(1, 40, {kExamples, kLength}, at::kLong).masked_fill(mask.logical_not(), 0);
  Batch batch;
  batch["input_ids"] = ids;
  batch["attention_mask"] = mask.to(at::kLong);
  batch["labels"] = ids.masked_fill(mask.logical_not(), -100);
  return batch;
}

std::shared_ptr<LlamaForCausalLM> tiny_llama() {
  torch::manual_seed(7);
  return std::make_shared<LlamaForCausalLM>(
      LlamaConfig::from_json(testing::tiny_llama_json(), "tiny llama"));
}

TEST(TokenLevelLoss, CountsTheLabelTokensThatAreTargets) {
  const Batch batch = ragged_rows();
  EXPECT_EQ(count_label_tokens({batch}, /*shifts_labels=*/true), 21);  // 29 labels - 8 firsts
  EXPECT_EQ(count_label_tokens({batch}, /*shifts_labels=*/false), 29);
  EXPECT_EQ(count_label_tokens({batch, batch}, true), 42);
  Batch unlabelled = batch;
  unlabelled.erase("labels");
  EXPECT_EQ(count_label_tokens({unlabelled}, true), 0);
}

TEST(TokenLevelLoss, TheLossWithACountIsTheTokenSumDividedByIt) {
  auto model = tiny_llama();
  const Batch batch = ragged_rows();
  const at::Tensor mean = model->forward(batch).loss;
  const at::Tensor by_count = model->forward_with_num_items(batch, 21).loss;
  EXPECT_NEAR(by_count.item<double>(), mean.item<double>(), 1e-6);  // 21 targets: the mean
  EXPECT_NEAR(model->forward_with_num_items(batch, 42).loss.item<double>(), mean.item<double>() / 2,
              1e-6);
  EXPECT_TRUE(model->accepts_loss_kwargs());
  EXPECT_TRUE(model->loss_shifts_labels());
}

TEST(TokenLevelLoss, ShiftLabelsFromTheCollatorAreUsedAsTheyAre) {
  auto model = tiny_llama();
  const Batch batch = ragged_rows();
  const at::Tensor labels = batch.at("labels");
  // What a collator that shifts for the model provides (HF's shift_labels).
  Batch shifted = batch;
  shifted.set(
      "shift_labels",
      at::cat({labels.narrow(1, 1, kLength - 1), at::full({kExamples, 1}, -100, at::kLong)}, 1));
  EXPECT_EQ(count_label_tokens({shifted}, /*shifts_labels=*/true), 21);
  EXPECT_NEAR(model->forward(shifted).loss.item<double>(),
              model->forward(batch).loss.item<double>(), 1e-6);
  // Not shifted again: only the targets they name count, and the loss follows them.
  Batch first_only = batch;
  first_only.set("shift_labels", labels.masked_fill(at::arange(kLength).ne(0).unsqueeze(0), -100));
  EXPECT_EQ(count_label_tokens({first_only}, true), 8);  // every row starts with a token
  EXPECT_GT(std::abs(model->forward(first_only).loss.item<double>() -
                     model->forward(batch).loss.item<double>()),
            1e-4);
}

struct RunResult {
  std::vector<at::Tensor> parameters;
  double first_logged_loss = 0;
};

RunResult train(int64_t batch_size, int64_t accumulation) {
  std::map<std::string, at::Tensor> columns;
  for (const auto& [key, value] : ragged_rows()) columns[key] = value;
  auto data = std::make_shared<TensorDataset>(columns);
  auto args = testing::quiet_args("token_loss");
  args.per_device_train_batch_size = batch_size;
  args.gradient_accumulation_steps = accumulation;
  args.train_sampling_strategy = TrainSamplingStrategy::kSequential;
  args.optim = OptimizerName::kSgd;
  args.learning_rate = 0.5;
  args.max_grad_norm = 0;  // the raw gradient decides the update
  args.num_train_epochs = 3;
  args.logging_steps = 1;
  auto model = tiny_llama();
  Trainer trainer(model, args, {.train_dataset = data});
  trainer.train();
  RunResult result;
  for (const auto& p : model->parameters()) result.parameters.push_back(p.detach().clone());
  result.first_logged_loss = trainer.state().log_history.front().at("loss").get<double>();
  return result;
}

double max_difference(const RunResult& a, const RunResult& b) {
  double diff = 0;
  for (size_t i = 0; i < a.parameters.size(); ++i)
    diff = std::max(diff, (a.parameters[i] - b.parameters[i]).abs().max().item<double>());
  return diff;
}

TEST(TokenLevelLoss, AccumulatedRaggedMicroBatchesTrainAsOneBatch) {
  const RunResult one_batch = train(8, 1);
  // The first step's logged loss is the mean over the batch's 21 target tokens.
  EXPECT_NEAR(one_batch.first_logged_loss, tiny_llama()->forward(ragged_rows()).loss.item<double>(),
              1e-5);
  for (const auto& [batch_size, accumulation] : {std::pair{4, 2}, std::pair{2, 4}}) {
    const RunResult accumulated = train(batch_size, accumulation);
    EXPECT_LE(max_difference(accumulated, one_batch), 2e-6) << batch_size << " x " << accumulation;
    EXPECT_NEAR(accumulated.first_logged_loss, one_batch.first_logged_loss, 1e-5);
  }
}

TEST(TokenLevelLoss, TheRowsAreRaggedEnoughToTellTheNormalisationsApart) {
  // Guards the test above: the mean of the micro-batch means (what weighting by examples gives)
  // is not the token mean for these rows, by far more than the tolerance.
  auto model = tiny_llama();
  const Batch rows = ragged_rows();
  double mean_of_means = 0;
  for (int64_t first = 0; first < kExamples; first += 2) {
    Batch part;
    for (const auto& [key, value] : rows) part[key] = value.narrow(0, first, 2);
    mean_of_means += model->forward(part).loss.item<double>() / 4;
  }
  EXPECT_GT(std::abs(mean_of_means - model->forward(rows).loss.item<double>()), 1e-3);
}

TEST(TokenLevelLoss, CausalLmLossWithACountSumsBeforeDividing) {
  const at::Tensor logits = torch::randn({1, 3, 5});
  const at::Tensor labels = torch::tensor({{1, 2, 4}}, torch::kLong);
  const at::Tensor per_token = at::cross_entropy_loss(
      logits[0].narrow(0, 0, 2), labels[0].narrow(0, 1, 2), {}, at::Reduction::None);
  EXPECT_NEAR(causal_lm_loss(logits, labels, 10).item<double>(),
              per_token.sum().item<double>() / 10, 1e-6);
  EXPECT_NEAR(causal_lm_loss(logits, labels).item<double>(), per_token.mean().item<double>(), 1e-6);
}

}  // namespace token_level_loss_test
}  // namespace ctrainer
