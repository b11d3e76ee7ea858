// The Trainer really trains: regression to ~zero loss, a separable classifier to 100% accuracy,
// and the step arithmetic of epochs / fractional epochs / max_steps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include <ctrainer/models/simple/linear_regression.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/trainer.h>

#include "support/test_data.h"

namespace ctrainer {
namespace trainer_training_test {

using testing::make_blobs_dataset;
using testing::make_regression_dataset;
using testing::quiet_args;

TEST(TrainerTraining, LinearRegressionReachesNearZeroLoss) {
  auto data = make_regression_dataset(64, 4);
  auto args = quiet_args("regression");
  args.learning_rate = 0.05;
  args.num_train_epochs = 60;
  args.per_device_train_batch_size = 16;
  args.lr_scheduler_type = SchedulerType::kConstant;
  auto model = std::make_shared<LinearRegression>(4, 1);
  Trainer trainer(model, args, {.train_dataset = data, .eval_dataset = data});
  const auto before = trainer.evaluate().at("eval_loss");
  TrainOutput out = trainer.train();
  const auto after = trainer.evaluate().at("eval_loss");
  EXPECT_GT(before, 0.1);
  EXPECT_LT(after, 1e-4);
  EXPECT_EQ(out.global_step, 60 * 4);
  // The learned weights are the generating ones: w_i = i / 4, b = 0.5.
  auto w = model->linear->weight.detach().flatten();
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(w[i].item<double>(), (i + 1) / 4.0, 1e-2);
  EXPECT_NEAR(model->linear->bias.item<double>(), 0.5, 1e-2);
}

TEST(TrainerTraining, ClassifierLearnsSeparableProblem) {
  auto train = make_blobs_dataset(128, 8, 1);
  auto eval = make_blobs_dataset(64, 8, 2);
  auto args = quiet_args("classifier");
  args.learning_rate = 1e-2;
  args.num_train_epochs = 3;
  args.per_device_train_batch_size = 16;
  args.eval_strategy = IntervalStrategy::kEpoch;
  auto model = std::make_shared<MLPClassifier>(8, 16, 2);
  auto accuracy = [](const EvalPrediction& p) {
    return Metrics{
        {"accuracy",
         p.predictions.argmax(-1).eq(p.label_ids).to(at::kDouble).mean().item<double>()}};
  };
  Trainer trainer(model, args,
                  {.train_dataset = train, .eval_dataset = eval, .compute_metrics = accuracy});
  trainer.train();
  Metrics m = trainer.evaluate();
  EXPECT_DOUBLE_EQ(m.at("eval_accuracy"), 1.0);
  EXPECT_LT(m.at("eval_loss"), 0.2);
  // eval_strategy=epoch evaluated after each of the 3 epochs (plus the explicit call).
  int evals = 0;
  for (const auto& e : trainer.state().log_history) evals += e.contains("eval_accuracy");
  EXPECT_EQ(evals, 4);

  PredictionOutput pred = trainer.predict(eval);
  EXPECT_EQ(pred.predictions.size(0), 64);
  EXPECT_EQ(pred.predictions.size(1), 2);
  std::vector<int64_t> all(64);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_TRUE(pred.label_ids.equal(eval->get_stacked(all)->at("labels")));  // dataset order
  EXPECT_DOUBLE_EQ(pred.metrics.at("test_accuracy"), 1.0);
  EXPECT_TRUE(pred.metrics.count("test_loss"));
}

TEST(TrainerTraining, StepArithmeticFollowsHf) {
  auto data = make_regression_dataset(20, 2);  // batch 4 -> 5 batches per epoch
  struct Case {
    double epochs;
    int64_t max_steps;
    int64_t ga;
    int64_t expected_steps;
    double expected_epoch;
  };
  // ga 2 over 5 batches: 3 updates per epoch (the last window is short).
  for (const Case& c : {Case{2, -1, 1, 10, 2.0}, Case{1.5, -1, 1, 8, 1.6}, Case{3, 7, 1, 7, 1.4},
                        Case{2, -1, 2, 6, 2.0}, Case{1, 4, 2, 4, 1.4}}) {
    auto args = quiet_args("steps");
    args.per_device_train_batch_size = 4;
    args.num_train_epochs = c.epochs;
    args.max_steps = c.max_steps;
    args.gradient_accumulation_steps = c.ga;
    Trainer trainer(std::make_shared<LinearRegression>(2, 1), args, {.train_dataset = data});
    TrainOutput out = trainer.train();
    EXPECT_EQ(out.global_step, c.expected_steps) << c.epochs << " " << c.max_steps << " " << c.ga;
    EXPECT_EQ(trainer.state().max_steps, c.expected_steps);
    EXPECT_NEAR(*trainer.state().epoch, c.expected_epoch, 1e-9) << c.epochs << " " << c.max_steps;
    for (const char* key : {"train_runtime", "train_samples_per_second", "train_steps_per_second",
                            "train_loss", "total_flos", "epoch"})
      EXPECT_TRUE(out.metrics.count(key)) << key;
  }
}

TEST(TrainerTraining, LogsLossLearningRateGradNormAndEpochToHistoryAndJsonLines) {
  auto data = make_regression_dataset(16, 2);
  auto args = quiet_args("logs");
  args.per_device_train_batch_size = 4;
  args.num_train_epochs = 2;
  args.logging_steps = 2;
  args.learning_rate = 0.1;
  args.lr_scheduler_type = SchedulerType::kConstant;
  args.max_grad_norm = 0.5;
  Trainer trainer(std::make_shared<LinearRegression>(2, 1), args, {.train_dataset = data});
  TrainOutput out = trainer.train();
  const auto& history = trainer.state().log_history;
  ASSERT_EQ(history.size(), 5u);  // steps 2, 4, 6, 8 + the final train metrics
  double loss_sum = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(history[i]["step"], 2 * (i + 1));
    EXPECT_NEAR(history[i]["epoch"].get<double>(), 0.5 * (i + 1), 1e-12);
    EXPECT_DOUBLE_EQ(history[i]["learning_rate"].get<double>(), 0.1);
    EXPECT_GT(history[i]["grad_norm"].get<double>(), 0.0);
    loss_sum += history[i]["loss"].get<double>() * 2;
  }
  // The logged windows partition the run: their losses average to train_loss.
  EXPECT_NEAR(out.training_loss, loss_sum / 8, 1e-6);
  std::ifstream jsonl(std::filesystem::path(args.output_dir) / "trainer_log.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(jsonl, line)) {
    EXPECT_EQ(nlohmann::json::parse(line), history[static_cast<size_t>(lines)]);
    ++lines;
  }
  EXPECT_EQ(lines, 5);
  auto written = nlohmann::json::parse(
      std::ifstream(std::filesystem::path(args.output_dir) / "training_args.json"));
  EXPECT_EQ(written["logging_steps"], 2);
  EXPECT_EQ(written["learning_rate"], 0.1);
}

TEST(TrainerTraining, LogsTheLearningRateTheStepUsedAndGradNormWithoutClipping) {
  // transformers 5 logs, at step k, the learning rate step k used (read before the scheduler
  // steps), and grad_norm even when max_grad_norm is 0 (measured, not clipped).
  auto data = make_regression_dataset(16, 2);
  auto run = [&](double max_grad_norm) {
    auto args = quiet_args("lr_log");
    args.per_device_train_batch_size = 4;
    args.max_steps = 4;
    args.logging_steps = 1;
    args.learning_rate = 0.1;
    args.lr_scheduler_type = SchedulerType::kLinear;
    args.max_grad_norm = max_grad_norm;
    torch::manual_seed(7);  // the same initial weights for both runs
    Trainer trainer(std::make_shared<LinearRegression>(2, 1), args, {.train_dataset = data});
    trainer.train();
    EXPECT_EQ(trainer.state().eval_steps, 500);  // no eval_steps: HF keeps TrainerState's 500
    return trainer.state().log_history;
  };
  const auto unclipped = run(0);
  const auto loose = run(1e9);  // clipping on, never active: the same gradients
  ASSERT_EQ(unclipped.size(), 5u);
  for (size_t k = 0; k < 4; ++k) {
    // Linear decay from 0.1 over 4 steps: 0.1, 0.075, 0.05, 0.025 (never the final 0).
    EXPECT_DOUBLE_EQ(unclipped[k]["learning_rate"].get<double>(), 0.1 * (4.0 - k) / 4.0) << k;
    ASSERT_TRUE(unclipped[k].contains("grad_norm")) << k;
    EXPECT_GT(unclipped[k]["grad_norm"].get<double>(), 0.0);
    EXPECT_EQ(unclipped[k]["grad_norm"], loose[k]["grad_norm"]) << k;
    EXPECT_EQ(unclipped[k]["loss"], loose[k]["loss"]) << k;
  }
}

TEST(TrainerTraining, LrSchedulerKwargsShapeTheLoggedLearningRates) {
  // warmup_stable_decay over 8 steps: warm-up 2, stable 2, linear decay 4 to 0.5 of the lr.
  auto data = make_regression_dataset(32, 2);
  auto args = quiet_args("wsd");
  args.per_device_train_batch_size = 4;
  args.max_steps = 8;
  args.logging_steps = 1;
  args.learning_rate = 0.1;
  args.warmup_steps = 2;
  args.lr_scheduler_type = SchedulerType::kWarmupStableDecay;
  args.lr_scheduler_kwargs =
      JsonObjectText{R"({"num_decay_steps": 4, "decay_type": "linear", "min_lr_ratio": 0.5})"};
  Trainer trainer(std::make_shared<LinearRegression>(2, 1), args, {.train_dataset = data});
  trainer.train();
  const auto& history = trainer.state().log_history;
  ASSERT_EQ(history.size(), 9u);
  const std::vector<double> multipliers = {0.5, 0.75, 1, 1, 1, 0.875, 0.75, 0.625};
  for (size_t k = 0; k < 8; ++k)
    EXPECT_DOUBLE_EQ(history[k]["learning_rate"].get<double>(), 0.1 * multipliers[k]) << k;
  auto written = nlohmann::json::parse(
      std::ifstream(std::filesystem::path(args.output_dir) / "training_args.json"));
  EXPECT_EQ(
      written["lr_scheduler_kwargs"],
      nlohmann::json({{"num_decay_steps", 4}, {"decay_type", "linear"}, {"min_lr_ratio", 0.5}}));
  EXPECT_EQ(written["lr_scheduler_type"], "warmup_stable_decay");
}

TEST(TrainerTraining, SeedMakesRunsIdenticalAndDataSeedOnlyChangesOrder) {
  auto data = make_blobs_dataset(32, 4);
  auto run = [&](int64_t seed, std::optional<int64_t> data_seed) {
    auto args = quiet_args("seeded");
    args.seed = seed;
    args.data_seed = data_seed;
    args.num_train_epochs = 1;
    args.per_device_train_batch_size = 4;
    torch::manual_seed(7);  // same initial weights in every run
    auto model = std::make_shared<MLPClassifier>(4, 8, 2, /*dropout=*/0.2);
    Trainer trainer(model, args, {.train_dataset = data});
    trainer.train();
    return model->parameters().front().detach().clone();
  };
  at::Tensor a = run(1, std::nullopt);
  EXPECT_TRUE(a.equal(run(1, std::nullopt)));
  EXPECT_FALSE(a.equal(run(2, std::nullopt)));  // dropout and order change
  EXPECT_FALSE(a.equal(run(1, 5)));             // order changes, dropout stays
}

TEST(TrainerTraining, SequentialSamplingTrainsInDatasetOrder) {
  // --train_sampling_strategy sequential: the data seed no longer matters, and one epoch equals
  // a hand-written loop over the batches in dataset order (full-batch SGD steps, no clipping).
  auto data = make_regression_dataset(12, 2);
  auto run = [&](std::optional<int64_t> data_seed) {
    auto args = quiet_args("sequential");
    args.train_sampling_strategy = TrainSamplingStrategy::kSequential;
    args.data_seed = data_seed;
    args.num_train_epochs = 1;
    args.per_device_train_batch_size = 4;
    args.optim = OptimizerName::kSgd;
    args.learning_rate = 0.1;
    args.lr_scheduler_type = SchedulerType::kConstant;
    args.max_grad_norm = 0;
    torch::manual_seed(3);
    auto model = std::make_shared<LinearRegression>(2, 1);
    Trainer trainer(model, args, {.train_dataset = data});
    trainer.train();
    return model->linear->weight.detach().clone();
  };
  const at::Tensor trained = run(std::nullopt);
  EXPECT_TRUE(trained.equal(run(11)));

  torch::manual_seed(3);
  auto by_hand = std::make_shared<LinearRegression>(2, 1);
  torch::optim::SGD sgd(by_hand->parameters(), torch::optim::SGDOptions(0.1));
  for (int64_t first = 0; first < 12; first += 4) {
    Batch batch = *data->get_stacked({first, first + 1, first + 2, first + 3});
    sgd.zero_grad();
    by_hand->forward(batch).loss.backward();
    sgd.step();
  }
  EXPECT_TRUE(trained.allclose(by_hand->linear->weight.detach(), 0, 1e-6))
      << trained << by_hand->linear->weight;
}

TEST(TrainerTraining, LabelSmoothingChangesTheLossAsHfLabelSmoother) {
  auto data = make_blobs_dataset(8, 4);
  auto args = quiet_args("smoothing");
  args.label_smoothing_factor = 0.1;
  args.per_device_eval_batch_size = 8;
  torch::manual_seed(0);
  auto model = std::make_shared<MLPClassifier>(4, 8, 2);
  Trainer trainer(model, args, {.eval_dataset = data});
  const double smoothed = trainer.evaluate().at("eval_loss");
  model->eval();
  Batch all = *data->get_stacked({0, 1, 2, 3, 4, 5, 6, 7});
  at::Tensor logits = model->forward(all).logits;
  at::Tensor logp = at::log_softmax(logits, -1);
  at::Tensor nll = -logp.gather(1, all.at("labels").unsqueeze(1)).mean();
  at::Tensor uniform = -logp.mean();
  EXPECT_NEAR(smoothed, (0.9 * nll + 0.1 * uniform).item<double>(), 1e-6);
}

TEST(TrainerTraining, FullDeterminismTurnsOnDeterministicAlgorithms) {
  auto data = make_blobs_dataset(16, 4);
  auto args = quiet_args("determinism");
  args.full_determinism = true;
  args.num_train_epochs = 1;
  ASSERT_FALSE(at::globalContext().deterministicAlgorithms());
  auto run = [&] {
    torch::manual_seed(0);
    auto model = std::make_shared<MLPClassifier>(4, 8, 2, 0.3);
    Trainer trainer(model, args, {.train_dataset = data});
    EXPECT_TRUE(at::globalContext().deterministicAlgorithms());
    trainer.train();
    return model->parameters().front().detach().clone();
  };
  EXPECT_TRUE(run().equal(run()));
  at::globalContext().setDeterministicAlgorithms(false, false);  // global state: restore
}

// include_num_input_tokens_seen: every log entry and trainer_state.json count the input tokens
// of all optimizer steps so far: every element of input_ids (all) or the attention mask's ones.
TEST(TrainerTraining, IncludeNumInputTokensSeenCountsAllOrNonPaddingTokens) {
  const int64_t n = 16, length = 5;
  at::Tensor mask = at::zeros({n, length}, at::kLong);
  for (int64_t i = 0; i < n; ++i) mask[i].narrow(0, 0, 1 + i % length).fill_(1);
  auto data = std::make_shared<TensorDataset>(
      std::map<std::string, at::Tensor>{{"x", at::randn({n, 2})},
                                        {"labels", at::randn({n, 1})},
                                        {"input_ids", at::ones({n, length}, at::kLong)},
                                        {"attention_mask", mask}});
  for (const InputTokensSeen mode :
       {InputTokensSeen::kAll, InputTokensSeen::kNonPadding, InputTokensSeen::kNo}) {
    auto args = quiet_args("tokens_seen");
    args.per_device_train_batch_size = 4;
    args.gradient_accumulation_steps = 2;
    args.num_train_epochs = 2;
    args.logging_steps = 1;
    args.include_num_input_tokens_seen = mode;
    Trainer trainer(std::make_shared<LinearRegression>(2, 1), args, {.train_dataset = data});
    trainer.train();
    const int64_t per_epoch =
        mode == InputTokensSeen::kAll ? n * length : mask.sum().item<int64_t>();
    const int64_t expected = mode == InputTokensSeen::kNo ? 0 : 2 * per_epoch;
    EXPECT_EQ(trainer.state().num_input_tokens_seen, expected) << to_string(mode);
    const auto& history = trainer.state().log_history;
    ASSERT_EQ(history.size(), 5u);  // 4 steps + the final metrics
    for (size_t k = 0; k < history.size(); ++k) {
      if (mode == InputTokensSeen::kNo) {
        EXPECT_FALSE(history[k].contains("num_input_tokens_seen"));
        EXPECT_FALSE(history[k].contains("train_tokens_per_second"));
        continue;
      }
      ASSERT_TRUE(history[k].contains("num_input_tokens_seen")) << k;
      if (k < 4) EXPECT_TRUE(history[k].contains("train_tokens_per_second")) << k;
    }
    if (mode == InputTokensSeen::kAll)  // 8 examples of 5 tokens per step
      for (size_t k = 0; k < 4; ++k)
        EXPECT_EQ(history[k]["num_input_tokens_seen"].get<int64_t>(), 40 * (int64_t(k) + 1));
    if (mode != InputTokensSeen::kNo)
      EXPECT_EQ(history[4]["num_input_tokens_seen"].get<int64_t>(), expected);
    EXPECT_EQ(trainer.state().to_json()["num_input_tokens_seen"].get<int64_t>(), expected);
  }
}

}  // namespace trainer_training_test
}  // namespace ctrainer
