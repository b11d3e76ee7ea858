// Scenario precision: Trainer step time and peak memory of a small BERT-shaped encoder in fp32
// and with --bf16 (CPU autocast), on this machine's CPU. Every measurement runs in a fresh child
// process (this binary re-executed with CTRAINER_BENCH_PRECISION_CHILD set), so the peak resident
// set of one precision never includes the other's, and the parent reads it from wait4's rusage.
// fp32 and bf16 children alternate round by round. metrics.<mode>.step_ms_median,
// metrics.<mode>.peak_rss_mb, metrics.bf16_speedup = fp32 step time / bf16 step time.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/trainer/trainer.h>

#include "bench_models.h"
#include "bench_report.h"
#include "bench_step_timer.h"

extern char** environ;

namespace ctrainer::bench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kChildEnv = "CTRAINER_BENCH_PRECISION_CHILD";
constexpr const char* kOutEnv = "CTRAINER_BENCH_PRECISION_OUT";
constexpr const char* kQuickEnv = "CTRAINER_BENCH_PRECISION_QUICK";
constexpr uint64_t kInitSeed = 1234;

struct Shape {
  std::string description;
  BertConfig config;
  int64_t seq, batch, warmup_steps, measured_steps;
};

/// BERT-mini (google/bert_uncased_L-4_H-256_A-4: 4 layers, hidden 256, 4 heads, ffn 1024,
/// BERT's vocabulary and dropout) as BertForSequenceClassification, at sequence length 128 and
/// batch 32.
Shape shape(bool quick) {
  Shape s;
  s.config = bert_mini_config(quick);
  s.seq = quick ? 32 : 128;
  s.batch = quick ? 8 : 32;
  s.warmup_steps = 2;
  s.measured_steps = quick ? 3 : 8;
  s.description = fmt::format(
      "BertForSequenceClassification (BERT-mini shape): vocab {}, hidden {}, {} layers, {} "
      "heads, ffn {}, dropout {}; seq {}, batch {}",
      s.config.vocab_size, s.config.hidden_size, s.config.num_hidden_layers,
      s.config.num_attention_heads, s.config.intermediate_size, s.config.hidden_dropout_prob,
      s.seq, s.batch);
  return s;
}

/// The child: builds data, model and Trainer; "idle" stops there (the baseline resident set),
/// "fp32"/"bf16" train and write their step times to the file named by kOutEnv.
[[noreturn]] void run_child(const std::string& mode) {
  const bool quick = std::getenv(kQuickEnv) != nullptr;
  const Shape s = shape(quick);
  const int64_t steps = s.warmup_steps + s.measured_steps;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(kInitSeed);
  const int64_t n = s.batch * steps;
  auto data = std::make_shared<TensorDataset>(std::map<std::string, at::Tensor>{
      {"input_ids", at::randint(0, s.config.vocab_size, {n, s.seq}, gen, at::kLong)},
      {"labels", at::randint(0, 2, {n}, gen, at::kLong)}});
  TrainingArguments args;
  args.output_dir =
      (fs::temp_directory_path() / fmt::format("ctrainer_bench_precision_{}", getpid())).string();
  args.use_cpu = true;
  args.bf16 = mode == "bf16";
  args.per_device_train_batch_size = s.batch;
  args.max_steps = steps;
  args.learning_rate = 1e-4;
  args.warmup_ratio = 0.1;
  args.save_strategy = SaveStrategy::kNo;
  args.logging_steps = static_cast<double>(steps);
  args.disable_tqdm = true;
  args.log_level = LogLevel::kError;
  torch::manual_seed(kInitSeed);
  auto model = std::make_shared<BertForSequenceClassification>(s.config);
  auto timer = std::make_shared<StepTimer>();
  Trainer trainer(model, args, {.train_dataset = data, .callbacks = {timer}});
  trainer.pop_callback("PrinterCallback");
  nlohmann::json out = {{"mode", mode}};
  if (mode != "idle") {
    trainer.train();
    std::vector<double> measured(timer->seconds.begin() + s.warmup_steps, timer->seconds.end());
    out["step_seconds"] = measured;
    out["step_seconds_median"] = median(measured);
    for (const auto& e : trainer.state().log_history)
      if (e.contains("loss")) out["loss"] = e["loss"];
  }
  fs::remove_all(args.output_dir);
  std::ofstream(std::getenv(kOutEnv)) << out.dump() << '\n';
  std::exit(0);
}

struct ChildResult {
  nlohmann::json report;
  double peak_rss_mb;
};

/// Re-executes this binary as a child in `mode`; returns its report and peak resident set.
ChildResult spawn_child(const std::string& mode, bool quick) {
  const fs::path out = fs::temp_directory_path() /
                       fmt::format("ctrainer_bench_precision_{}_{}.json", getpid(), mode);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.push_back(std::string(kChildEnv) + "=" + mode);
  env_strings.push_back(std::string(kOutEnv) + "=" + out.string());
  if (quick) env_strings.push_back(std::string(kQuickEnv) + "=1");
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string scenario = "precision";
  std::vector<char*> argv = {self.data(), scenario.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0)
    throw std::runtime_error("precision: cannot start a child process of " + self);
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("precision: the " + mode + " child failed (status " +
                             std::to_string(status) + ")");
  std::ifstream in(out);
  ChildResult r{nlohmann::json::parse(in), static_cast<double>(usage.ru_maxrss) / 1024.0};
  fs::remove(out);
  return r;
}

BenchResult run_precision(const BenchOptions& options) {
  if (const char* mode = std::getenv(kChildEnv)) run_child(mode);
  const Shape s = shape(options.quick);
  const int64_t rounds = options.quick ? 1 : options.rounds;
  const std::vector<std::string> modes = {"fp32", "bf16"};
  std::map<std::string, std::vector<double>> step_ms, peak_mb;
  std::map<std::string, double> loss;
  std::vector<double> idle_mb;
  for (int64_t round = 0; round < rounds; ++round) {
    idle_mb.push_back(spawn_child("idle", options.quick).peak_rss_mb);
    // Alternate which precision goes first so slow drifts of the machine hit both alike.
    for (size_t i = 0; i < modes.size(); ++i) {
      const std::string& mode = modes[(i + static_cast<size_t>(round)) % modes.size()];
      ChildResult r = spawn_child(mode, options.quick);
      step_ms[mode].push_back(1000.0 * r.report["step_seconds_median"].get<double>());
      peak_mb[mode].push_back(r.peak_rss_mb);
      loss[mode] = r.report["loss"].get<double>();
    }
  }
  BenchResult result;
  result.scenario = "precision";
  result.config["model"] = s.description;
  result.config["parameters"] = [&] {
    torch::manual_seed(kInitSeed);
    return BertForSequenceClassification(s.config).num_parameters();
  }();
  result.config["device"] = "cpu";
  result.config["rounds"] = rounds;
  result.config["steps_per_run"] =
      fmt::format("{} warm-up + {} measured (median per run)", s.warmup_steps, s.measured_steps);
  result.config["optimizer"] = "adamw_torch, lr 1e-4, warmup_ratio 0.1, max_grad_norm 1.0";
  result.config["peak_memory"] =
      "ru_maxrss of a fresh child process per run (wait4); idle = same process up to the "
      "constructed Trainer, without training";
  const double idle = median(idle_mb);
  auto& m = result.metrics;
  m["idle_peak_rss_mb"] = idle;
  for (const auto& mode : modes) {
    m[mode]["step_ms_median"] = median(step_ms[mode]);
    m[mode]["step_ms_min"] = *std::min_element(step_ms[mode].begin(), step_ms[mode].end());
    m[mode]["step_ms_max"] = *std::max_element(step_ms[mode].begin(), step_ms[mode].end());
    m[mode]["peak_rss_mb"] = median(peak_mb[mode]);
    m[mode]["training_rss_mb"] = median(peak_mb[mode]) - idle;
    m[mode]["last_logged_loss"] = loss[mode];
  }
  m["bf16_speedup"] = median(step_ms["fp32"]) / median(step_ms["bf16"]);
  m["bf16_peak_rss_ratio"] = median(peak_mb["bf16"]) / median(peak_mb["fp32"]);
  result.header = {"precision",   "step ms (median)", "step ms min..max",
                   "peak RSS MB", "peak - idle MB",   "mean train loss"};
  for (const auto& mode : modes)
    result.rows.push_back({{mode, fmt::format("{:.1f}", m[mode]["step_ms_median"].get<double>()),
                            fmt::format("{:.1f}..{:.1f}", m[mode]["step_ms_min"].get<double>(),
                                        m[mode]["step_ms_max"].get<double>()),
                            fmt::format("{:.0f}", m[mode]["peak_rss_mb"].get<double>()),
                            fmt::format("{:.0f}", m[mode]["training_rss_mb"].get<double>()),
                            fmt::format("{:.4f}", loss[mode])}});
  return result;
}

}  // namespace

Scenario precision_scenario() {
  return {"precision", "fp32 vs bf16 autocast: step time and peak memory of a small BERT on CPU",
          run_precision};
}

}  // namespace ctrainer::bench
