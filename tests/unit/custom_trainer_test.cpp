// Subclasses overriding compute_loss (HF docs' weighted cross-entropy) and training_step are
// really used by train(), evaluate() and predict().
#include <gtest/gtest.h>

#include <numeric>

#include <torch/nn/functional/loss.h>

#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/trainer.h>

#include "support/test_data.h"

namespace ctrainer {
namespace custom_trainer_test {

/// The weighted-loss example of the HF Trainer documentation, in C++.
class WeightedLossTrainer : public Trainer {
 public:
  WeightedLossTrainer(std::shared_ptr<Model> model, TrainingArguments args, TrainerComponents c,
                      std::vector<float> class_weights)
      : Trainer(std::move(model), std::move(args), std::move(c)),
        weights_(std::move(class_weights)) {}
  int64_t calls = 0;

  LossAndOutputs compute_loss(Model& model, const Batch& inputs, bool,
                              std::optional<int64_t>) override {
    ++calls;
    Batch features = inputs;
    features.erase("labels");
    ModelOutput outputs = model.forward(features);
    auto weight = at::tensor(weights_, outputs.logits.options());
    auto loss = torch::nn::functional::cross_entropy(
        outputs.logits, inputs.at("labels"),
        torch::nn::functional::CrossEntropyFuncOptions().weight(weight));
    return {loss, outputs};
  }

 private:
  std::vector<float> weights_;
};

std::shared_ptr<TensorDataset> three_class_data() {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  at::Tensor x = at::randn({24, 4}, gen, at::kFloat);
  at::Tensor y = at::arange(24, at::kLong).remainder(3);
  return std::make_shared<TensorDataset>(
      std::map<std::string, at::Tensor>{{"x", x}, {"labels", y}});
}

std::vector<at::Tensor> params_of(Model& m) {
  std::vector<at::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p.detach().clone());
  return out;
}

template <typename T>
std::pair<std::vector<at::Tensor>, std::shared_ptr<MLPClassifier>> run(std::vector<float> weights) {
  auto args = testing::quiet_args("weighted");
  args.num_train_epochs = 2;
  args.per_device_train_batch_size = 6;
  args.learning_rate = 0.01;
  torch::manual_seed(3);
  auto model = std::make_shared<MLPClassifier>(4, 8, 3);
  std::unique_ptr<Trainer> trainer;
  if constexpr (std::is_same_v<T, WeightedLossTrainer>)
    trainer = std::make_unique<WeightedLossTrainer>(
        model, args, TrainerComponents{.train_dataset = three_class_data()}, weights);
  else
    trainer = std::make_unique<Trainer>(model, args,
                                        TrainerComponents{.train_dataset = three_class_data()});
  trainer->train();
  return {params_of(*model), model};
}

TEST(CustomTrainer, WeightedComputeLossIsUsedInTraining) {
  auto plain = run<Trainer>({}).first;
  auto uniform = run<WeightedLossTrainer>({1, 1, 1}).first;  // equal weights == plain CE
  auto weighted = run<WeightedLossTrainer>({1, 2, 3}).first;
  double same = 0, different = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    same = std::max(same, (plain[i] - uniform[i]).abs().max().item<double>());
    different = std::max(different, (plain[i] - weighted[i]).abs().max().item<double>());
  }
  EXPECT_LT(same, 1e-6);
  EXPECT_GT(different, 1e-4);
}

TEST(CustomTrainer, WeightedComputeLossIsUsedInEvaluation) {
  auto data = three_class_data();
  auto args = testing::quiet_args("weighted_eval");
  args.per_device_eval_batch_size = 24;
  torch::manual_seed(3);
  auto model = std::make_shared<MLPClassifier>(4, 8, 3);
  WeightedLossTrainer trainer(model, args, {.eval_dataset = data}, {1, 2, 3});
  const double eval_loss = trainer.evaluate().at("eval_loss");
  EXPECT_EQ(trainer.calls, 1);
  model->eval();
  Batch all = *data->get_stacked([] {
    std::vector<int64_t> v(24);
    std::iota(v.begin(), v.end(), 0);
    return v;
  }());
  auto logits = model->forward(all).logits;
  auto expected = torch::nn::functional::cross_entropy(
      logits, all.at("labels"),
      torch::nn::functional::CrossEntropyFuncOptions().weight(at::tensor({1.f, 2.f, 3.f})));
  EXPECT_NEAR(eval_loss, expected.item<double>(), 1e-6);
}

/// A training_step that computes the loss but never calls backward: nothing may change.
class NoBackwardTrainer : public Trainer {
 public:
  using Trainer::Trainer;
  int64_t steps = 0;
  at::Tensor training_step(Model& model, const Batch& inputs, std::optional<int64_t> n) override {
    ++steps;
    model.train();
    return compute_loss(model, inputs.to(device()), false, n).loss.detach();
  }
};

TEST(CustomTrainer, TrainingStepOverrideIsUsed) {
  auto args = testing::quiet_args("no_backward");
  args.num_train_epochs = 1;
  args.per_device_train_batch_size = 4;
  args.gradient_accumulation_steps = 2;
  args.optim = OptimizerName::kSgd;
  torch::manual_seed(3);
  auto model = std::make_shared<MLPClassifier>(4, 8, 3);
  auto before = params_of(*model);
  NoBackwardTrainer trainer(model, args, {.train_dataset = three_class_data()});
  auto out = trainer.train();
  EXPECT_EQ(trainer.steps, 6);    // 24 examples / batch 4
  EXPECT_EQ(out.global_step, 3);  // 6 micro-batches / accumulation 2
  auto after = params_of(*model);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(before[i].equal(after[i]));
  EXPECT_GT(out.training_loss, 0.0);  // the returned losses were still accumulated
}

}  // namespace custom_trainer_test
}  // namespace ctrainer
