// Callback events arrive in HF's order, control flags set by callbacks are obeyed, and
// EarlyStoppingCallback stops at the right step.
#include <gtest/gtest.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/simple/linear_regression.h>
#include <ctrainer/trainer/callbacks/early_stopping_callback.h>
#include <ctrainer/trainer/trainer.h>

#include "support/test_data.h"

namespace ctrainer {
namespace callbacks_test {

/// Records every event name.
class RecordingCallback : public TrainerCallback {
 public:
  std::vector<std::string> events;
  std::string name() const override { return "RecordingCallback"; }
#define RECORD(EVENT)                                              \
  void EVENT(Args, TrainerState&, TrainerControl&, Ctx) override { \
    events.push_back(#EVENT);                                      \
  }
  RECORD(on_init_end)
  RECORD(on_train_begin)
  RECORD(on_train_end)
  RECORD(on_epoch_begin)
  RECORD(on_epoch_end)
  RECORD(on_step_begin)
  RECORD(on_pre_optimizer_step)
  RECORD(on_optimizer_step)
  RECORD(on_substep_end)
  RECORD(on_step_end)
  RECORD(on_evaluate)
  RECORD(on_predict)
  RECORD(on_save)
  RECORD(on_log)
  RECORD(on_prediction_step)
#undef RECORD
};

TEST(Callbacks, EventSequenceOfASmallRun) {
  auto data = testing::make_regression_dataset(8, 2);  // batch 2 -> 4 micro-batches
  auto eval = testing::make_regression_dataset(4, 2);  // eval batch 2 -> 2 prediction steps
  auto args = testing::quiet_args("events");
  args.per_device_train_batch_size = 2;
  args.per_device_eval_batch_size = 2;
  args.gradient_accumulation_steps = 2;  // -> 2 optimizer steps
  args.num_train_epochs = 1;
  args.logging_steps = 1;
  args.eval_strategy = IntervalStrategy::kSteps;
  args.eval_steps = 2;
  auto recorder = std::make_shared<RecordingCallback>();
  Trainer trainer(std::make_shared<LinearRegression>(2, 1), args,
                  {.train_dataset = data, .eval_dataset = eval, .callbacks = {recorder}});
  trainer.train();
  trainer.predict(eval);
  const std::vector<std::string> step = {"on_step_begin",         "on_substep_end",
                                         "on_pre_optimizer_step", "on_optimizer_step",
                                         "on_step_end",           "on_log"};
  std::vector<std::string> expected = {"on_init_end", "on_train_begin", "on_epoch_begin"};
  expected.insert(expected.end(), step.begin(), step.end());
  expected.insert(expected.end(), step.begin(), step.end());
  // The last step also saves: HF's default save_strategy "steps" saves at the end of training.
  for (const char* e : {"on_prediction_step", "on_prediction_step", "on_log", "on_evaluate",
                        "on_save", "on_epoch_end", "on_log", "on_train_end", "on_prediction_step",
                        "on_prediction_step", "on_predict"})
    expected.push_back(e);
  EXPECT_EQ(recorder->events, expected);
}

/// Records which loaders the context holds at each event.
class LoaderRecordingCallback : public TrainerCallback {
 public:
  std::vector<std::string> seen;
  std::string name() const override { return "LoaderRecordingCallback"; }
  void on_step_end(Args, TrainerState&, TrainerControl&, Ctx ctx) override {
    record("step_end", ctx);
  }
  void on_prediction_step(Args, TrainerState&, TrainerControl&, Ctx ctx) override {
    record("prediction_step", ctx);
  }
  void on_evaluate(Args, TrainerState&, TrainerControl&, Ctx ctx) override {
    record("evaluate", ctx);
  }
  void on_predict(Args, TrainerState&, TrainerControl&, Ctx ctx) override {
    record("predict", ctx);
  }

 private:
  // "<event> train=<batches> eval=<batches of <examples>>", "-" for a missing loader.
  void record(const std::string& event, const CallbackContext& ctx) {
    std::string line = event + " train=";
    line += ctx.train_dataloader ? std::to_string(ctx.train_dataloader->num_batches()) : "-";
    line += " eval=";
    line += ctx.eval_dataloader ? std::to_string(ctx.eval_dataloader->num_batches()) + " of " +
                                      std::to_string(ctx.eval_dataloader->dataset().size())
                                : "-";
    seen.push_back(line);
  }
};

TEST(Callbacks, ContextHoldsTheTrainLoaderAndTheLatestEvalOrTestLoader) {
  auto data = testing::make_regression_dataset(8, 2);  // batch 2 -> 4 batches
  auto eval = testing::make_regression_dataset(4, 2);  // 2 batches
  auto test = testing::make_regression_dataset(6, 2);  // 3 batches
  auto args = testing::quiet_args("loaders");
  args.per_device_train_batch_size = 2;
  args.per_device_eval_batch_size = 2;
  args.num_train_epochs = 1;
  args.max_steps = 2;
  args.save_strategy = SaveStrategy::kNo;
  auto recorder = std::make_shared<LoaderRecordingCallback>();
  Trainer trainer(std::make_shared<LinearRegression>(2, 1), args,
                  {.train_dataset = data, .eval_dataset = eval, .callbacks = {recorder}});
  trainer.train();
  trainer.evaluate();
  trainer.predict(test);
  // HF: train_dataloader from the training loop on, eval_dataloader from evaluation_loop on
  // (predict() included), None before the first evaluation.
  const std::vector<std::string> expected = {"step_end train=4 eval=-",
                                             "step_end train=4 eval=-",
                                             "prediction_step train=4 eval=2 of 4",
                                             "prediction_step train=4 eval=2 of 4",
                                             "evaluate train=4 eval=2 of 4",
                                             "prediction_step train=4 eval=3 of 6",
                                             "prediction_step train=4 eval=3 of 6",
                                             "prediction_step train=4 eval=3 of 6",
                                             "predict train=4 eval=3 of 6"};
  EXPECT_EQ(recorder->seen, expected);
}

/// Sets control flags at chosen steps.
class SteeringCallback : public TrainerCallback {
 public:
  int64_t stop_training_at = -1, stop_epoch_at = -1, log_at = -1, evaluate_at = -1;
  std::string name() const override { return "SteeringCallback"; }
  void on_step_end(Args, TrainerState& state, TrainerControl& control, Ctx) override {
    if (state.global_step == stop_training_at) control.should_training_stop = true;
    if (state.global_step == stop_epoch_at) control.should_epoch_stop = true;
    if (state.global_step == log_at) control.should_log = true;
    if (state.global_step == evaluate_at) control.should_evaluate = true;
  }
};

struct SteeredRun {
  int64_t global_step;
  std::vector<nlohmann::json> history;
};

SteeredRun steer(std::shared_ptr<SteeringCallback> cb) {
  auto data = testing::make_regression_dataset(8, 2);  // batch 2 -> 4 steps per epoch
  auto args = testing::quiet_args("steer");
  args.per_device_train_batch_size = 2;
  args.num_train_epochs = 2;
  Trainer trainer(std::make_shared<LinearRegression>(2, 1), args,
                  {.train_dataset = data, .eval_dataset = data, .callbacks = {cb}});
  auto out = trainer.train();
  return {out.global_step, trainer.state().log_history};
}

TEST(Callbacks, ShouldTrainingStopIsObeyed) {
  auto cb = std::make_shared<SteeringCallback>();
  cb->stop_training_at = 3;
  EXPECT_EQ(steer(cb).global_step, 3);
}

TEST(Callbacks, ShouldEpochStopSkipsToTheNextEpoch) {
  auto cb = std::make_shared<SteeringCallback>();
  cb->stop_epoch_at = 2;  // epoch 0 ends after 2 steps, epoch 1 runs its 4
  EXPECT_EQ(steer(cb).global_step, 6);
}

TEST(Callbacks, ShouldLogAndShouldEvaluateAreObeyed) {
  auto cb = std::make_shared<SteeringCallback>();
  cb->log_at = 3;
  cb->evaluate_at = 5;
  auto run = steer(cb);
  ASSERT_EQ(run.history.size(), 3u);  // log at 3, eval at 5, final train metrics
  EXPECT_EQ(run.history[0]["step"], 3);
  EXPECT_TRUE(run.history[0].contains("loss"));
  EXPECT_EQ(run.history[1]["step"], 5);
  EXPECT_TRUE(run.history[1].contains("eval_loss"));
  EXPECT_TRUE(run.history[2].contains("train_runtime"));
}

/// compute_metrics returning a scripted sequence of scores.
ComputeMetricsFn scripted(std::vector<double> values) {
  auto calls = std::make_shared<size_t>(0);
  return [values, calls](const EvalPrediction&) {
    return Metrics{{"score", values.at(std::min((*calls)++, values.size() - 1))}};
  };
}

int64_t early_stopping_step(std::vector<double> scores, int64_t patience, double threshold,
                            bool greater_is_better) {
  auto data = testing::make_regression_dataset(8, 2);
  auto args = testing::quiet_args("early");
  args.per_device_train_batch_size = 1;  // 8 steps per epoch
  args.num_train_epochs = 3;
  args.eval_strategy = IntervalStrategy::kSteps;
  args.eval_steps = 1;
  args.metric_for_best_model = "score";
  args.greater_is_better = greater_is_better;
  auto es = std::make_shared<EarlyStoppingCallback>(patience, threshold);
  Trainer trainer(std::make_shared<LinearRegression>(2, 1), args,
                  {.train_dataset = data,
                   .eval_dataset = data,
                   .compute_metrics = scripted(scores),
                   .callbacks = {es}});
  return trainer.train().global_step;
}

TEST(Callbacks, EarlyStoppingStopsAfterPatienceEvaluationsWithoutImprovement) {
  // lower is better: 0.5 best, 0.4 best, 0.45 worse (1), 0.42 worse (2) -> stop at step 4.
  EXPECT_EQ(early_stopping_step({0.5, 0.4, 0.45, 0.42, 0.1}, 2, 0.0, false), 4);
  // an improvement resets the counter: 0.5, 0.6 (1), 0.3 (0), 0.4 (1), 0.35 (2) -> step 5.
  EXPECT_EQ(early_stopping_step({0.5, 0.6, 0.3, 0.4, 0.35, 0.1}, 2, 0.0, false), 5);
  // greater is better.
  EXPECT_EQ(early_stopping_step({0.5, 0.6, 0.55, 0.58, 0.9}, 2, 0.0, true), 4);
  // improvements of at most the threshold do not count: 0.5, 0.47 (1), 0.46 (2) -> step 3.
  EXPECT_EQ(early_stopping_step({0.5, 0.47, 0.46, 0.1}, 2, 0.05, false), 3);
  // never worse -> runs to the end (24 steps).
  std::vector<double> improving;
  for (int i = 0; i < 30; ++i) improving.push_back(1.0 - 0.01 * i);
  EXPECT_EQ(early_stopping_step(improving, 1, 0.0, false), 24);
}

TEST(Callbacks, EarlyStoppingWithoutMetricIsAClearError) {
  auto data = testing::make_regression_dataset(8, 2);
  auto args = testing::quiet_args("early_bad");
  args.eval_strategy = IntervalStrategy::kSteps;
  Trainer trainer(std::make_shared<LinearRegression>(2, 1), args,
                  {.train_dataset = data,
                   .eval_dataset = data,
                   .callbacks = {std::make_shared<EarlyStoppingCallback>(2)}});
  try {
    trainer.train();
    FAIL() << "expected an ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("--metric_for_best_model"), std::string::npos);
  }
}

TEST(Callbacks, PopCallbackRemovesIt) {
  auto args = testing::quiet_args("pop");
  Trainer trainer(std::make_shared<LinearRegression>(2, 1), args);
  EXPECT_NE(trainer.pop_callback("DefaultFlowCallback"), nullptr);
  EXPECT_EQ(trainer.pop_callback("DefaultFlowCallback"), nullptr);
  EXPECT_NE(trainer.pop_callback("PrinterCallback"), nullptr);  // disable_tqdm -> printer
}

}  // namespace callbacks_test
}  // namespace ctrainer
