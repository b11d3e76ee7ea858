// Scenario trainer_overhead: the Trainer against a hand-written libtorch loop doing the same work
// (same model, data, seeds, optimizer, schedule, clipping and loss logging), measured alternately
// in one run. metrics.<workload>.ratio = Trainer steps/s / hand-loop steps/s (issue 17's target:
// >= 0.99).
#include <chrono>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/optim/optimizer.h>

#include <ctrainer/core/grad_clip.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/models/simple/transformer_classifier.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>
#include <ctrainer/trainer/optim/optimizer_factory.h>
#include <ctrainer/trainer/trainer.h>

#include "bench_report.h"

namespace ctrainer::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Workload {
  std::string name;
  std::function<std::shared_ptr<Model>()> make_model;
  std::shared_ptr<TensorDataset> data;
  int64_t batch_size;
  int64_t steps;
  nlohmann::json config;
};

constexpr uint64_t kInitSeed = 1234;

TrainingArguments workload_args(const Workload& w) {
  TrainingArguments args;
  args.output_dir = "/tmp/ctrainer_bench_trainer_overhead";
  args.per_device_train_batch_size = w.batch_size;
  args.max_steps = w.steps;
  args.learning_rate = 1e-3;
  args.weight_decay = 0.01;
  args.warmup_ratio = 0.1;
  args.logging_steps = 50;
  args.disable_tqdm = true;
  args.log_level = LogLevel::kError;
  args.validate();
  return args;
}

struct Run {
  double steps_per_second;
  std::vector<at::Tensor> params;
};

std::vector<at::Tensor> snapshot(Model& model) {
  std::vector<at::Tensor> out;
  for (const auto& p : model.parameters()) out.push_back(p.detach().clone());
  return out;
}

Run run_trainer(const Workload& w, const TrainingArguments& args) {
  torch::manual_seed(kInitSeed);
  auto model = w.make_model();
  Trainer trainer(model, args, {.train_dataset = w.data});
  trainer.pop_callback("PrinterCallback");  // the hand loop prints nothing either
  const auto start = Clock::now();
  trainer.train();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {static_cast<double>(w.steps) / seconds, snapshot(*model)};
}

/// What a careful user writes by hand: shuffle per epoch, gather, forward, backward, clip, step,
/// schedule, zero, and a running loss read every logging_steps.
Run run_hand_loop(const Workload& w, const TrainingArguments& args) {
  torch::manual_seed(kInitSeed);
  auto model = w.make_model();
  torch::manual_seed(static_cast<uint64_t>(args.seed));  // as the Trainer seeds dropout
  const auto start = Clock::now();
  auto optimizer = create_optimizer(args, *model);
  auto scheduler =
      get_scheduler(args.lr_scheduler_type, optimizer, get_warmup_steps(args, w.steps), w.steps);
  const int64_t n = w.data->size();
  const int64_t batches = (n + w.batch_size - 1) / w.batch_size;
  at::Tensor running_loss = at::zeros({});
  double logged = 0;
  int64_t step = 0;
  model->train();
  for (int64_t epoch = 0; step < w.steps; ++epoch) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(args.seed + epoch));
    at::Tensor perm = at::randperm(n, gen, at::kLong);
    const int64_t* p = perm.data_ptr<int64_t>();
    for (int64_t b = 0; b < batches && step < w.steps; ++b) {
      const int64_t begin = b * w.batch_size;
      std::vector<int64_t> idx(p + begin, p + std::min(n, begin + w.batch_size));
      Batch batch = *w.data->get_stacked(idx);
      at::Tensor loss = model->forward(batch).loss;
      loss.backward();
      clip_grad_norm_(model->parameters(), args.max_grad_norm);
      optimizer->step();
      scheduler->step();
      // Dropping the gradients, as the Trainer does, so the ratio measures only loop overhead.
      for (auto& param : model->parameters()) param.mutable_grad() = at::Tensor();
      running_loss.add_(loss.detach());
      if (++step % static_cast<int64_t>(args.logging_steps) == 0) {
        logged += running_loss.item<double>();
        running_loss.zero_();
      }
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  (void)logged;
  return {static_cast<double>(w.steps) / seconds, snapshot(*model)};
}

double max_abs_diff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double out = 0;
  for (size_t i = 0; i < a.size(); ++i)
    out = std::max(out, (a[i] - b[i]).abs().max().item<double>());
  return out;
}

std::vector<Workload> workloads(bool quick) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  std::vector<Workload> out;
  {
    const int64_t n = 8192, features = 64, classes = 10;
    at::Tensor x = at::randn({n, features}, gen, at::kFloat);
    at::Tensor y = at::randint(classes, {n}, gen, at::kLong);
    out.push_back({"mlp",
                   [] { return std::make_shared<MLPClassifier>(64, 256, 10, 0.1, 3); },
                   std::make_shared<TensorDataset>(
                       std::map<std::string, at::Tensor>{{"x", x}, {"labels", y}}),
                   64,
                   quick ? 20 : 2000,
                   {{"model", "MLP 64-256x3-10, dropout 0.1"}, {"batch_size", 64}}});
  }
  {
    TransformerClassifierConfig c;
    c.vocab_size = 1000;
    c.hidden_size = 128;
    c.num_layers = 2;
    c.num_heads = 4;
    c.intermediate_size = 512;
    c.max_positions = 64;
    const int64_t n = 1024, seq = 64;
    at::Tensor ids = at::randint(c.vocab_size, {n, seq}, gen, at::kLong);
    at::Tensor y = at::randint(2, {n}, gen, at::kLong);
    out.push_back(
        {"transformer",
         [c] { return std::make_shared<TransformerClassifier>(c); },
         std::make_shared<TensorDataset>(
             std::map<std::string, at::Tensor>{{"input_ids", ids}, {"labels", y}}),
         16,
         quick ? 5 : 80,
         {{"model", "2-layer transformer encoder, hidden 128, 4 heads, ffn 512, dropout 0.1"},
          {"batch_size", 16},
          {"seq_len", seq}}});
  }
  return out;
}

BenchResult run_trainer_overhead(const BenchOptions& options) {
  BenchResult result;
  result.scenario = "trainer_overhead";
  result.header = {"workload", "steps",          "trainer steps/s", "hand loop steps/s",
                   "ratio",    "ratio min..max", "max |param diff|"};
  result.config["rounds"] = options.rounds;
  result.config["threads"] = 0;  // filled in after the first Trainer set the thread count
  result.config["optimizer"] =
      "adamw_torch_fused, lr 1e-3, weight_decay 0.01, linear schedule, warmup_ratio 0.1, "
      "max_grad_norm "
      "1.0";
  for (const auto& w : workloads(options.quick)) {
    const auto args = workload_args(w);
    run_trainer(w, args);  // warm-up: thread pools, allocator, page cache
    run_hand_loop(w, args);
    std::vector<double> trainer_sps, hand_sps, ratios;
    double diff = 0;
    for (int64_t r = 0; r < options.rounds; ++r) {
      // Alternate the order so neither side always runs on a warmer machine.
      Run t{}, h{};
      if (r % 2 == 0) {
        t = run_trainer(w, args);
        h = run_hand_loop(w, args);
      } else {
        h = run_hand_loop(w, args);
        t = run_trainer(w, args);
      }
      trainer_sps.push_back(t.steps_per_second);
      hand_sps.push_back(h.steps_per_second);
      ratios.push_back(t.steps_per_second / h.steps_per_second);
      diff = std::max(diff, max_abs_diff(t.params, h.params));
    }
    const double ratio = median(trainer_sps) / median(hand_sps);
    const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
    result.config[w.name] = w.config;
    result.config[w.name]["steps"] = w.steps;
    result.metrics[w.name] = {{"trainer_steps_per_second", median(trainer_sps)},
                              {"hand_loop_steps_per_second", median(hand_sps)},
                              {"ratio", ratio},
                              {"ratio_min", *lo},
                              {"ratio_max", *hi},
                              {"max_abs_param_diff", diff}};
    result.rows.push_back(
        {{w.name, std::to_string(w.steps), fmt::format("{:.1f}", median(trainer_sps)),
          fmt::format("{:.1f}", median(hand_sps)), fmt::format("{:.3f}", ratio),
          fmt::format("{:.3f}..{:.3f}", *lo, *hi), fmt::format("{:.2g}", diff)}});
  }
  result.config["threads"] = at::get_num_threads();
  // The headline: the worse of the two workloads.
  double worst = 1e9;
  for (const auto& [name, m] : result.metrics.items())
    worst = std::min(worst, m["ratio"].get<double>());
  result.metrics["ratio"] = worst;
  return result;
}

}  // namespace

Scenario trainer_overhead_scenario() {
  return {"trainer_overhead",
          "Trainer vs a hand-written libtorch loop (MLP and 2-layer transformer)",
          run_trainer_overhead};
}

}  // namespace ctrainer::bench
