// Mixed precision in the Trainer: the autocast scope, the choice of precision from the
// arguments and its refusals, bf16 training close to fp32, overflow steps skipped exactly (with
// loss scaling driven in fp32 on the CPU, see InjectedOverflowSkipsExactlyThatStep), scale
// growth and hysteresis in a run, full evaluation in bf16, and scaler state through checkpoints.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/simple/linear_regression.h>
#include <ctrainer/models/simple/transformer_classifier.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>
#include <ctrainer/trainer/checkpoint/optimizer_state.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>
#include <ctrainer/trainer/precision/autocast_scope.h>
#include <ctrainer/trainer/precision/precision.h>
#include <ctrainer/trainer/trainer.h>

#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer {
namespace precision_test {
namespace fs = std::filesystem;

// ---- autocast scope --------------------------------------------------------------------------

TEST(AutocastScope, CastsLinearToBf16InsideAndRestoresTheStateAfter) {
  const at::Tensor x = at::randn({4, 3});
  const at::Tensor w = at::randn({2, 3});
  EXPECT_EQ(at::linear(x, w).scalar_type(), at::kFloat);
  {
    AutocastScope outer(c10::DeviceType::CPU, at::kBFloat16);
    EXPECT_EQ(at::linear(x, w).scalar_type(), at::kBFloat16);
    {
      AutocastScope off(c10::DeviceType::CPU, std::nullopt);  // no dtype: does nothing
      EXPECT_EQ(at::linear(x, w).scalar_type(), at::kBFloat16);
    }
    EXPECT_TRUE(compat::get_autocast_state(c10::DeviceType::CPU).enabled);
  }
  EXPECT_FALSE(compat::get_autocast_state(c10::DeviceType::CPU).enabled);
  EXPECT_EQ(at::linear(x, w).scalar_type(), at::kFloat);
}

// ---- precision from the arguments --------------------------------------------------------------

TEST(Precision, FromArgsFollowsHf) {
  TrainingArguments args;
  auto fp32 = Precision::from_args(args, c10::Device(c10::kCPU));
  EXPECT_FALSE(fp32->autocast_dtype().has_value());
  EXPECT_EQ(fp32->grad_scaler(), nullptr);

  args.bf16 = true;
  args.bf16_full_eval = true;
  auto bf16 = Precision::from_args(args, c10::Device(c10::kCPU));
  EXPECT_EQ(bf16->autocast_dtype(), at::kBFloat16);
  EXPECT_EQ(bf16->grad_scaler(), nullptr);  // bf16 has fp32's range: no loss scaling
  EXPECT_EQ(bf16->full_eval_dtype(), at::kBFloat16);
  EXPECT_EQ(bf16->describe(), "bf16 autocast on cpu, no loss scaling, full eval in bf16");

  args.half_precision_backend = HalfPrecisionBackend::kCpuAmp;  // what auto means on a CPU
  EXPECT_EQ(Precision::from_args(args, c10::Device(c10::kCPU))->autocast_dtype(), at::kBFloat16);
}

TEST(Precision, Fp16OnTheCpuIsRefusedWithTheFix) {
  TrainingArguments args;
  args.fp16 = true;
  testing::expect_error([&] { Precision::from_args(args, c10::Device(c10::kCPU)); },
                        {"--fp16", "CUDA", "--bf16"});
  args = TrainingArguments{};
  args.fp16_full_eval = true;
  testing::expect_error([&] { Precision::from_args(args, c10::Device(c10::kCPU)); },
                        {"--fp16_full_eval", "--bf16_full_eval"});
  // The Trainer refuses at construction, before anything is written.
  args = testing::quiet_args("fp16_cpu");
  args.fp16 = true;
  args.use_cpu = true;
  testing::expect_error([&] { Trainer trainer(std::make_shared<LinearRegression>(2, 1), args); },
                        {"--fp16"});
  EXPECT_FALSE(fs::exists(args.output_dir));
}

TEST(Precision, ArgumentChecks) {
  TrainingArguments args;
  args.fp16_full_eval = true;
  args.bf16_full_eval = true;
  testing::expect_error([&] { args.validate(); }, {"--fp16_full_eval", "--bf16_full_eval"});
  args = TrainingArguments{};
  args.half_precision_backend = HalfPrecisionBackend::kApex;
  testing::expect_error([&] { args.validate(); }, {"not supported yet: --half_precision_backend"});
  args = TrainingArguments{};
  // A typo never reaches the struct: the parse function refuses it; validate() refuses a value
  // cast from an integer.
  testing::expect_error(
      [&] {
        args.half_precision_backend =
            parse_choice<HalfPrecisionBackend>("amp", "half_precision_backend");
      },
      {"--half_precision_backend must be one of"});
  args.half_precision_backend = static_cast<HalfPrecisionBackend>(7);
  testing::expect_error([&] { args.validate(); }, {"--half_precision_backend must be one of"});
  args = TrainingArguments{};
  args.bf16 = true;
  EXPECT_NO_THROW(args.validate());  // mixed precision is no longer refused
  // --tf32 true needs an Ampere GPU (HF raises the same); false is harmless anywhere.
  testing::expect_error([] { apply_tf32(true, c10::Device(c10::kCPU)); }, {"--tf32"});
  EXPECT_NO_THROW(apply_tf32(false, c10::Device(c10::kCPU)));
  EXPECT_NO_THROW(apply_tf32(std::nullopt, c10::Device(c10::kCPU)));
}

// ---- bf16 training close to fp32 ----------------------------------------------------------------

/// Linear regression y = x w + b that records the dtype its prediction was computed in.
class ProbedRegression : public Model {
 public:
  explicit ProbedRegression(int64_t features) {
    linear = register_module("linear", torch::nn::Linear(features, 1));
  }
  ModelOutput forward(const Batch& batch) override {
    at::Tensor pred = linear->forward(batch.at("x"));
    if (is_training()) train_dtype = pred.scalar_type();
    if (poison_next) {
      // An inf in the gradient flowing into the prediction: bias and weight gradients overflow.
      pred.register_hook([](at::Tensor g) {
        g = g.clone();
        g.view({-1})[0] = std::numeric_limits<float>::infinity();
        return g;
      });
      poison_next = false;
    }
    ModelOutput out;
    out.logits = pred;
    if (batch.contains("labels"))
      out.loss = torch::nn::functional::mse_loss(pred.to(at::kFloat), batch.at("labels"));
    return out;
  }
  torch::nn::Linear linear{nullptr};
  at::ScalarType train_dtype = at::kDouble;
  bool poison_next = false;
};

TrainingArguments regression_args(const std::string& name) {
  TrainingArguments args = testing::quiet_args(name);
  args.per_device_train_batch_size = 16;
  args.max_steps = 200;
  args.learning_rate = 0.05;
  args.save_strategy = SaveStrategy::kNo;
  args.use_cpu = true;
  return args;
}

struct RegressionRun {
  double train_loss;
  double eval_loss;
  at::ScalarType train_dtype;
  std::vector<at::Tensor> params;
};

RegressionRun train_regression(bool bf16) {
  auto data = testing::make_regression_dataset(256, 4, 3);
  auto args = regression_args(bf16 ? "bf16" : "fp32");
  args.bf16 = bf16;
  torch::manual_seed(11);
  auto model = std::make_shared<ProbedRegression>(4);
  Trainer trainer(model, args, {.train_dataset = data, .eval_dataset = data});
  auto out = trainer.train();
  const double eval_loss = trainer.evaluate().at("eval_loss");
  std::vector<at::Tensor> params;
  for (const auto& p : model->parameters()) params.push_back(p.detach().clone());
  return {out.training_loss, eval_loss, model->train_dtype, params};
}

TEST(PrecisionTraining, Bf16RegressionEndsCloseToFp32) {
  const auto fp32 = train_regression(false);
  const auto bf16 = train_regression(true);
  EXPECT_EQ(fp32.train_dtype, at::kFloat);
  EXPECT_EQ(bf16.train_dtype, at::kBFloat16);  // the forward really ran in bf16
  // The fit is exact in fp32 (noise-free data: the eval loss goes to ~4e-9). bf16 rounds inputs
  // and weights to 8 significant bits (relative error up to 2^-9 ≈ 0.2% each), so predictions
  // of magnitude ~2 carry errors of a few 1e-3 and the loss floor is ~1e-5 (measured 1.3e-5);
  // the weights land within a few bf16 ulps (2^-8 relative) of the fp32 solution.
  EXPECT_LT(fp32.eval_loss, 1e-6);
  EXPECT_LT(bf16.eval_loss, 1e-4);
  EXPECT_NEAR(bf16.train_loss, fp32.train_loss, 0.05 * fp32.train_loss);
  for (size_t i = 0; i < fp32.params.size(); ++i)
    EXPECT_TRUE(at::allclose(bf16.params[i], fp32.params[i], /*rtol=*/2e-2, /*atol=*/2e-2))
        << "param " << i << "\n"
        << bf16.params[i] << "\n"
        << fp32.params[i];
}

/// Token sequences labelled by whether token 1 occurs: a task a 2-layer encoder learns fast.
std::shared_ptr<TensorDataset> token_dataset(int64_t n, int64_t seq, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor ids = at::randint(2, 50, {n, seq}, gen, at::kLong);
  at::Tensor labels = at::arange(n, at::kLong).remainder(2);
  at::Tensor where = at::randint(0, seq, {n}, gen, at::kLong);
  for (int64_t i = 0; i < n; ++i)
    if (labels[i].item<int64_t>() == 1) ids[i][where[i].item<int64_t>()] = 1;
  return std::make_shared<TensorDataset>(
      std::map<std::string, at::Tensor>{{"input_ids", ids}, {"labels", labels}});
}

TEST(PrecisionTraining, Bf16TransformerEndsCloseToFp32) {
  // TransformerClassifier stands in for a small BERT (the BERT model lands separately).
  // 128 sequences of 16 tokens, batch 16: 8 steps per epoch, 8 epochs.
  auto data = token_dataset(128, 16, 5);
  std::vector<double> losses[2];
  for (int bf16 = 0; bf16 < 2; ++bf16) {
    auto args = testing::quiet_args(bf16 ? "tf_bf16" : "tf_fp32");
    args.bf16 = bf16 != 0;
    args.use_cpu = true;
    args.per_device_train_batch_size = 16;
    args.num_train_epochs = 8;
    args.learning_rate = 4e-3;
    args.logging_steps = 8;  // one log per epoch
    args.save_strategy = SaveStrategy::kNo;
    torch::manual_seed(3);
    TransformerClassifierConfig config;
    config.vocab_size = 50;
    config.max_positions = 16;
    config.hidden_size = 32;
    config.num_heads = 4;
    config.intermediate_size = 64;
    config.dropout = 0.0;
    auto model = std::make_shared<TransformerClassifier>(config);
    Trainer trainer(model, args, {.train_dataset = data});
    trainer.train();
    for (const auto& e : trainer.state().log_history)
      if (e.contains("loss")) losses[bf16].push_back(e["loss"].get<double>());
  }
  ASSERT_EQ(losses[0].size(), 8u);
  ASSERT_EQ(losses[1].size(), 8u);
  // Both learn the task (ln 2 = 0.69 at chance; fp32 ends near 0.006) ...
  EXPECT_LT(losses[0].back(), 0.05);
  EXPECT_LT(losses[1].back(), 0.05);
  // ... along close curves. Autocast runs the matmuls in bf16 (8 significant bits) but keeps
  // softmax, layer norm, the loss and the fp32 master weights, so each step is perturbed by
  // rounding noise only; measured per-epoch mean losses differ by < 5e-4 over 64 steps. 0.01
  // leaves room for other BLAS builds yet fails if bf16 changed the optimisation.
  for (size_t i = 0; i < losses[0].size(); ++i)
    EXPECT_NEAR(losses[1][i], losses[0][i], 0.01) << "epoch " << i;
  // ... yet not identical: autocast really changed the arithmetic.
  EXPECT_NE(losses[1], losses[0]);
}

// ---- loss scaling and overflow -----------------------------------------------------------------

/// Poisons the gradient of optimizer step `k` (1-based) through the model, and records the
/// parameters, the optimizer state, the learning rate and the loss scale after every step.
class OverflowProbe : public TrainerCallback {
 public:
  explicit OverflowProbe(std::vector<int64_t> poison_steps, Trainer** trainer)
      : poison_(std::move(poison_steps)), trainer_(trainer) {}
  std::string name() const override { return "OverflowProbe"; }
  void on_step_begin(Args, TrainerState& s, TrainerControl&, Ctx ctx) override {
    const bool poison =
        std::find(poison_.begin(), poison_.end(), s.global_step + 1) != poison_.end();
    dynamic_cast<ProbedRegression*>(ctx.model)->poison_next = poison;
  }
  void on_step_end(Args, TrainerState&, TrainerControl&, Ctx ctx) override {
    std::vector<at::Tensor> params;
    for (const auto& p : ctx.model->parameters()) params.push_back(p.detach().clone());
    after_step_params.push_back(params);
    auto opt = optimizer_state_dict(*ctx.optimizer);
    for (auto& [k, t] : opt.tensors) t = t.clone();
    after_step_optimizer.push_back(opt);
    after_step_lr.push_back(ctx.lr_scheduler->get_last_lr().front());
    const GradScaler* scaler = (*trainer_)->precision().grad_scaler();
    after_step_scale.push_back(scaler ? scaler->get_scale() : 0.0);
  }
  std::vector<std::vector<at::Tensor>> after_step_params;
  std::vector<OptimizerStateDict> after_step_optimizer;
  std::vector<double> after_step_lr;
  std::vector<double> after_step_scale;

 private:
  std::vector<int64_t> poison_;
  Trainer** trainer_;
};

struct ScaledRun {
  std::shared_ptr<OverflowProbe> probe;
  std::vector<at::Tensor> params;
  int64_t global_step;
  std::string log;
};

/// Loss scaling is meant for fp16, which the CPU cannot run; a Precision with loss scaling in
/// fp32 (given through TrainerComponents::precision, the public way to choose a scaler) drives
/// the same unscale / skip / update path as --fp16 does on a GPU.
ScaledRun run_scaled(std::optional<GradScalerOptions> scaler, std::vector<int64_t> poison,
                     int64_t max_steps, const std::string& name, bool capture_log = false) {
  auto data = testing::make_regression_dataset(128, 4, 3);
  auto args = regression_args(name);
  args.max_steps = max_steps;
  args.warmup_steps = 2;  // the lr changes every step, so a skipped scheduler step shows
  args.weight_decay = 0.01;
  if (capture_log) args.log_level = LogLevel::kInfo;
  torch::manual_seed(11);
  auto model = std::make_shared<ProbedRegression>(4);
  Trainer* self = nullptr;
  auto probe = std::make_shared<OverflowProbe>(std::move(poison), &self);
  std::shared_ptr<Precision> precision;  // none: the plain fp32 run
  if (scaler)
    precision = std::make_shared<Precision>(
        PrecisionOptions{.mixed = MixedPrecision::kNo, .loss_scaling = scaler},
        c10::Device(c10::kCPU));
  if (capture_log) ::testing::internal::CaptureStderr();
  Trainer trainer(model, args,
                  {.train_dataset = data, .callbacks = {probe}, .precision = precision});
  self = &trainer;
  trainer.train();
  ScaledRun out{probe, {}, trainer.state().global_step, ""};
  if (capture_log) out.log = ::testing::internal::GetCapturedStderr();
  for (const auto& p : model->parameters()) out.params.push_back(p.detach().clone());
  return out;
}

GradScalerOptions torch_scaler(double init, int64_t interval) {
  GradScalerOptions o;
  o.init_scale = init;
  o.growth_interval = interval;
  return o;
}

bool same_tensors(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].equal(b[i])) return false;
  return true;
}

bool same_optimizer(const OptimizerStateDict& a, const OptimizerStateDict& b) {
  if (a.meta != b.meta || a.tensors.size() != b.tensors.size()) return false;
  for (const auto& [k, t] : a.tensors)
    if (!t.equal(b.tensors.at(k))) return false;
  return true;
}

TEST(LossScaling, PowerOfTwoScaleInFp32IsBitwiseTheUnscaledRun) {
  // Multiplying by 2^k and back is exact in floating point: the scaled run must equal the plain
  // fp32 run bit for bit, which shows the loss is scaled and the gradients unscaled exactly once.
  const auto plain = run_scaled(std::nullopt, {}, 8, "plain");
  const auto scaled = run_scaled(torch_scaler(1024, 1000), {}, 8, "scaled");
  EXPECT_TRUE(same_tensors(scaled.params, plain.params));
  EXPECT_TRUE(same_optimizer(scaled.probe->after_step_optimizer.back(),
                             plain.probe->after_step_optimizer.back()));
}

TEST(LossScaling, InjectedOverflowSkipsExactlyThatStep) {
  const auto run = run_scaled(torch_scaler(1024, 1000), {4}, 6, "inject", /*capture_log=*/true);
  const auto& p = *run.probe;
  ASSERT_EQ(p.after_step_params.size(), 6u);
  EXPECT_EQ(run.global_step, 6);  // a skipped step still counts (HF)
  // Step 4 changed nothing: parameters, optimizer state (AdamW moments and step count) and
  // learning rate are those after step 3 ...
  EXPECT_TRUE(same_tensors(p.after_step_params[3], p.after_step_params[2]));
  EXPECT_TRUE(same_optimizer(p.after_step_optimizer[3], p.after_step_optimizer[2]));
  EXPECT_EQ(p.after_step_lr[3], p.after_step_lr[2]);
  // ... while every other step did change them.
  for (size_t i : {1u, 2u, 4u, 5u}) {
    EXPECT_FALSE(same_tensors(p.after_step_params[i], p.after_step_params[i - 1])) << i;
    EXPECT_NE(p.after_step_lr[i], p.after_step_lr[i - 1]) << i;
  }
  EXPECT_EQ(p.after_step_scale, (std::vector<double>{1024, 1024, 1024, 512, 512, 512}));
  EXPECT_NE(run.log.find("step 4: gradients overflowed"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("loss scale now 512"), std::string::npos) << run.log;
}

TEST(LossScaling, ScaleGrowsAfterGrowthIntervalCleanSteps) {
  const auto run = run_scaled(torch_scaler(256, 3), {5}, 9, "growth");
  // Clean steps 1-3 → x2 at step 3; overflow at 5 → /2 and the count restarts; 6-8 → x2 at 8.
  EXPECT_EQ(run.probe->after_step_scale,
            (std::vector<double>{256, 256, 512, 512, 256, 256, 256, 512, 512}));
}

TEST(LossScaling, DeepSpeedHysteresisSkipsEveryOverflowButDropsTheScaleLater) {
  GradScalerOptions ds = GradScalerOptions::deepspeed();
  ds.initial_scale_power = 10;
  ds.loss_scale_window = 1000;
  ds.hysteresis = 2;
  const auto run = run_scaled(ds, {2, 4}, 5, "hysteresis");
  const auto& p = *run.probe;
  // Both overflowing steps are skipped; the first only consumes the hysteresis.
  EXPECT_EQ(p.after_step_scale, (std::vector<double>{1024, 1024, 1024, 512, 512}));
  EXPECT_TRUE(same_tensors(p.after_step_params[1], p.after_step_params[0]));
  EXPECT_TRUE(same_tensors(p.after_step_params[3], p.after_step_params[2]));
  EXPECT_EQ(p.after_step_lr[1], p.after_step_lr[0]);
  EXPECT_EQ(p.after_step_lr[3], p.after_step_lr[2]);
  EXPECT_FALSE(same_tensors(p.after_step_params[2], p.after_step_params[1]));
}

// ---- full evaluation
// -----------------------------------------------------------------------------

TEST(FullEval, Bf16FullEvalCastsTheModelOnlyOutsideTraining) {
  auto data = testing::make_regression_dataset(64, 4, 3);
  auto args = regression_args("full_eval");
  args.max_steps = 20;
  args.eval_strategy = IntervalStrategy::kSteps;
  args.eval_steps = 10;
  args.bf16_full_eval = true;
  torch::manual_seed(11);
  auto model = std::make_shared<ProbedRegression>(4);
  Trainer trainer(model, args, {.train_dataset = data, .eval_dataset = data});
  trainer.train();
  // Evaluations during training kept fp32 (HF: only `not self.is_in_train` casts).
  EXPECT_EQ(model->linear->weight.scalar_type(), at::kFloat);
  std::vector<double> in_train;
  for (const auto& e : trainer.state().log_history)
    if (e.contains("eval_loss")) in_train.push_back(e["eval_loss"].get<double>());
  ASSERT_EQ(in_train.size(), 2u);
  const double bf16_loss = trainer.evaluate().at("eval_loss");
  EXPECT_EQ(model->linear->weight.scalar_type(), at::kBFloat16);
  // Same weights rounded to bf16: the loss moves by bf16's rounding of the predictions only.
  EXPECT_NEAR(bf16_loss, in_train.back(), 0.02 * in_train.back() + 1e-3);
  EXPECT_NE(bf16_loss, in_train.back());
}

// ---- checkpoints -----------------------------------------------------------------------------

using testing::StopAt;

struct ResumeRun {
  std::vector<at::Tensor> params;
  OptimizerStateDict optimizer;
  nlohmann::json scaler;
  std::vector<nlohmann::json> history;
  int64_t global_step = 0;
};

ResumeRun run_with_checkpoints(const std::string& dir, std::optional<int64_t> stop_at, bool resume,
                               bool scaling, uint64_t init_seed = 11) {
  auto data = testing::make_regression_dataset(96, 4, 3);
  auto args = regression_args("unused");
  args.output_dir = dir;
  args.max_steps = 10;
  args.save_strategy = SaveStrategy::kSteps;
  args.save_steps = 1;
  args.logging_steps = 3;
  args.warmup_steps = 2;
  if (resume) args.resume_from_checkpoint = "latest";
  torch::manual_seed(init_seed);
  auto model = std::make_shared<ProbedRegression>(4);
  Trainer* self = nullptr;
  std::vector<std::shared_ptr<TrainerCallback>> callbacks;
  // Overflows at steps 2 and 7 (decided by global_step, so a resumed run poisons the same steps).
  if (scaling)
    callbacks.push_back(std::make_shared<OverflowProbe>(std::vector<int64_t>{2, 7}, &self));
  if (stop_at) callbacks.push_back(std::make_shared<StopAt>(*stop_at));
  TrainerComponents components{.train_dataset = data, .callbacks = callbacks};
  if (scaling)
    components.precision = std::make_shared<Precision>(
        PrecisionOptions{.loss_scaling = torch_scaler(64, 3)}, c10::Device(c10::kCPU));
  Trainer trainer(model, args, components);
  self = &trainer;
  trainer.train();
  ResumeRun out;
  for (const auto& p : model->parameters()) out.params.push_back(p.detach().clone());
  out.optimizer = optimizer_state_dict(*trainer.optimizer());
  if (auto* scaler = trainer.precision().grad_scaler()) out.scaler = scaler->state_dict();
  out.global_step = trainer.state().global_step;
  for (auto e : trainer.state().log_history)
    if (!e.contains("train_runtime")) out.history.push_back(e);
  return out;
}

TEST(LossScalingCheckpoint, ScalerStateRoundTripsAndResumeIsExact) {
  const auto straight =
      run_with_checkpoints(testing::fresh_output_dir("straight"), std::nullopt, false, true);
  // 64 → 32 (overflow at 2) → 64 (3 clean: 3,4,5) → 32 (overflow at 7) → tracker 3 → 64 at 10.
  EXPECT_EQ(straight.scaler["scale"], 64.0);
  for (int64_t k : {2, 4, 8}) {
    SCOPED_TRACE("stop at " + std::to_string(k));
    const auto dir = testing::fresh_output_dir("stopped" + std::to_string(k));
    const auto stopped = run_with_checkpoints(dir, k, false, true);
    const auto ckpt = checkpoint_path(dir, k);
    ASSERT_TRUE(fs::exists(ckpt / "scaler.json"));
    EXPECT_EQ(nlohmann::json::parse(std::ifstream(ckpt / "scaler.json")), stopped.scaler);
    EXPECT_FALSE(verify_checkpoint(ckpt).has_value());  // listed in the manifest with its CRC
    const auto resumed = run_with_checkpoints(dir, std::nullopt, true, true, /*init_seed=*/77);
    EXPECT_TRUE(same_tensors(resumed.params, straight.params));
    EXPECT_TRUE(same_optimizer(resumed.optimizer, straight.optimizer));
    EXPECT_EQ(resumed.scaler, straight.scaler);
    EXPECT_EQ(resumed.history, straight.history);
  }
}

TEST(LossScalingCheckpoint, ScalerFileOnlyWithScalingAndMismatchesResume) {
  // Without loss scaling no scaler.json is written.
  const auto plain_dir = testing::fresh_output_dir("plain");
  run_with_checkpoints(plain_dir, 3, false, false);
  EXPECT_FALSE(fs::exists(checkpoint_path(plain_dir, 3) / "scaler.json"));
  // A run with scaling resumes from it, with a fresh scale (HF: loads only if present).
  const auto fresh = run_with_checkpoints(plain_dir, std::nullopt, true, true);
  EXPECT_EQ(fresh.global_step, 10);
  // Fresh 64 at step 4: x2 after 4-6, /2 at the overflow of 7, x2 after 8-10.
  EXPECT_EQ(fresh.scaler["scale"], 128.0);
  // A run without scaling resumes from a checkpoint that has scaler.json (ignored).
  const auto scaled_dir = testing::fresh_output_dir("scaled");
  run_with_checkpoints(scaled_dir, 3, false, true);
  ASSERT_TRUE(fs::exists(checkpoint_path(scaled_dir, 3) / "scaler.json"));
  const auto ignored = run_with_checkpoints(scaled_dir, std::nullopt, true, false);
  EXPECT_TRUE(ignored.scaler.is_null());
  EXPECT_EQ(ignored.global_step, 10);
}

}  // namespace precision_test
}  // namespace ctrainer
