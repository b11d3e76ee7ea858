// BERT through the Trainer: --gradient_checkpointing trains to the very same parameters as the
// plain path (dropout on, so the recompute must replay the RNG), and --bf16 autocast on CPU ends
// close to fp32 on a padded batch-of-sentences task.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/runtime/seed.h>
#include <ctrainer/trainer/trainer.h>

#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer {
namespace bert_trainer_test {

// CTRAINER_EXAMPLES_DATA_DIR is <repo>/examples/data; the tiny BERT lives in <repo>/tests/data.
const std::string kTinyConfig =
    std::string(CTRAINER_EXAMPLES_DATA_DIR) + "/../../tests/data/bert_tiny/config.json";

/// Padded "sentences" over the tiny vocabulary: label 1 iff token 7 occurs. Lengths 4..12.
std::shared_ptr<TensorDataset> token_dataset(int64_t n) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1234);
  const int64_t max_len = 12;
  at::Tensor ids = at::randint(5, 64, {n, max_len}, gen, at::kLong);
  at::Tensor lengths = at::randint(4, max_len + 1, {n}, gen, at::kLong);
  at::Tensor positions = at::arange(max_len, at::kLong).unsqueeze(0);
  at::Tensor mask = positions.lt(lengths.unsqueeze(1)).to(at::kLong);
  ids = ids * mask;           // [PAD] = 0 after each sentence
  ids.select(1, 0).fill_(2);  // a [CLS]-like first token
  at::Tensor labels = ids.eq(7).any(1).to(at::kLong);
  return std::make_shared<TensorDataset>(std::map<std::string, at::Tensor>{
      {"input_ids", ids}, {"attention_mask", mask}, {"labels", labels}});
}

std::shared_ptr<BertForSequenceClassification> tiny_bert() {
  BertConfig config = BertConfig::from_json_file(kTinyConfig);
  config.set_num_labels(2);
  set_seed(7);  // identical initial weights in every run
  return std::make_shared<BertForSequenceClassification>(config);
}

struct RunResult {
  std::map<std::string, at::Tensor> parameters;
  double train_loss = 0;
  double eval_loss = 0;
  bool encoder_recomputes = false;
};

RunResult train_tiny_bert(TrainingArguments args) {
  auto data = token_dataset(96);
  auto model = tiny_bert();
  Trainer trainer(model, args, {.train_dataset = data, .eval_dataset = data});
  RunResult out;
  out.encoder_recomputes = model->bert->encoder->gradient_checkpointing();
  out.train_loss = trainer.train().training_loss;
  out.eval_loss = trainer.evaluate().at("eval_loss");
  for (const auto& p : model->named_parameters()) out.parameters[p.key()] = p.value().clone();
  return out;
}

TEST(BertTrainer, GradientCheckpointingTrainsToIdenticalParameters) {
  TrainingArguments args = testing::quiet_args("plain");
  args.per_device_train_batch_size = 16;
  args.max_steps = 6;
  args.learning_rate = 1e-3;
  args.save_strategy = SaveStrategy::kNo;
  const RunResult plain = train_tiny_bert(args);
  args.output_dir = testing::fresh_output_dir("checkpointed");
  args.gradient_checkpointing = true;
  const RunResult checkpointed = train_tiny_bert(args);
  // The flag reached the encoder (else the comparison below would compare two plain runs).
  EXPECT_FALSE(plain.encoder_recomputes);
  EXPECT_TRUE(checkpointed.encoder_recomputes);
  ASSERT_EQ(plain.parameters.size(), checkpointed.parameters.size());
  for (const auto& [name, value] : plain.parameters)
    EXPECT_TRUE(at::equal(value, checkpointed.parameters.at(name))) << name;
  EXPECT_EQ(plain.train_loss, checkpointed.train_loss);
}

TEST(BertTrainer, Bf16AutocastEndsCloseToFp32) {
  TrainingArguments args = testing::quiet_args("fp32");
  args.per_device_train_batch_size = 16;
  args.num_train_epochs = 8;
  args.learning_rate = 2e-3;
  args.save_strategy = SaveStrategy::kNo;
  const RunResult fp32 = train_tiny_bert(args);
  args.output_dir = testing::fresh_output_dir("bf16");
  args.bf16 = true;
  const RunResult bf16 = train_tiny_bert(args);
  // Both learn (ln 2 = 0.693 is chance level) ...
  EXPECT_LT(fp32.eval_loss, 0.45);
  EXPECT_LT(bf16.eval_loss, 0.45);
  // ... and bf16's 8-bit mantissa keeps the mean loss within a few hundredths of fp32's.
  EXPECT_NEAR(bf16.train_loss, fp32.train_loss, 0.03);
  EXPECT_NEAR(bf16.eval_loss, fp32.eval_loss, 0.05);
  // The weights themselves stay fp32 (master weights): only the compute is bf16.
  for (const auto& [name, value] : bf16.parameters)
    EXPECT_EQ(value.scalar_type(), at::kFloat) << name;
  // And the compute really was bf16: with the same seed and data, an --bf16 that changed
  // nothing would repeat the fp32 run bit for bit (as the gradient checkpointing test shows).
  EXPECT_NE(bf16.train_loss, fp32.train_loss);
  int64_t differing = 0;
  for (const auto& [name, value] : fp32.parameters)
    differing += at::equal(value, bf16.parameters.at(name)) ? 0 : 1;
  EXPECT_GT(differing, 0) << "every parameter equals the fp32 run's: --bf16 did nothing";
}

TEST(BertTrainer, GradientCheckpointingOnAModelWithoutSupportIsRefused) {
  TrainingArguments args = testing::quiet_args("mlp");
  args.gradient_checkpointing = true;
  auto model = std::make_shared<MLPClassifier>(4, 8, 2);
  testing::expect_error([&] { Trainer trainer(model, args); },
                        {"--gradient_checkpointing", "does not support"});
}

}  // namespace bert_trainer_test
}  // namespace ctrainer
