// Trains a linear regression with the installed ctrainer and checks that the loss fell.
#include <cstdio>

/// This project links only the installed package, not GoogleTest: a minimal assertion.
#define CHECK(condition)                                                \
  do {                                                                  \
    if (!(condition)) {                                                 \
      std::fprintf(stderr, "consumer: check failed: %s\n", #condition); \
      return 1;                                                         \
    }                                                                   \
  } while (false)

#include <ctrainer/models/simple/linear_regression.h>
#include <ctrainer/trainer/trainer.h>

int main() {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
  at::Tensor x = at::randn({64, 3}, gen, at::kFloat);
  at::Tensor y = x.sum(1, /*keepdim=*/true) + 1.0;
  auto data = std::make_shared<ctrainer::TensorDataset>(
      std::map<std::string, at::Tensor>{{"x", x}, {"labels", y}});
  ctrainer::TrainingArguments args;
  args.output_dir = "consumer_output";
  args.learning_rate = 0.05;
  args.num_train_epochs = 30;
  args.lr_scheduler_type = ctrainer::SchedulerType::kConstant;
  args.disable_tqdm = true;
  args.log_level = ctrainer::LogLevel::kError;
  ctrainer::Trainer trainer(std::make_shared<ctrainer::LinearRegression>(3, 1), args,
                            {.train_dataset = data, .eval_dataset = data});
  const double before = trainer.evaluate().at("eval_loss");
  trainer.train();
  const double after = trainer.evaluate().at("eval_loss");
  CHECK(after < before);
  CHECK(after < 1e-3);
  std::printf("consumer: trained, loss %g -> %g OK\n", before, after);
  return 0;
}
