// Scenario scaling: how a BERT training step with the Trainer scales on this machine's CPU, one
// variable at a time around a BERT-mini baseline (4 layers, hidden 256, batch 16, sequence 64):
//  - batch size 4..64 at sequence 64;
//  - sequence length 32..256 at batch 16;
//  - model width: hidden 64..512 with heads = hidden / 64 and ffn = 4 × hidden;
//  - processes: 1 process with 1 and with 2 intra-op threads against 2 processes with 1 thread
//    each, training with DDP over Gloo (the batch is per process, as with torchrun).
// For every point: step time (median of a run's measured steps, then the median over --rounds
// runs), samples/s and tokens/s (every token is real: no padding), and the peak resident set of
// the process doing the work. Each point runs in a fresh child process (this binary
// re-executed, as a torchrun-like job of 1 or 2 ranks), so the peak is that configuration's own,
// read by the parent from wait4's rusage; points shared by several sweeps are measured once.
// The rounds rotate the order of the points so that slow drifts of the machine hit all alike.
// With --plots DIR: samples/s and peak RSS against each swept variable as SVG charts.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <ctrainer/integrations/plot/svg_line_chart.h>
#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/trainer/trainer.h>

#include "bench_report.h"
#include "bench_step_timer.h"
#include "bench_workers.h"

namespace ctrainer::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kWorkerEnv = "CTRAINER_BENCH_SCALING_WORKER";  // value: report prefix
constexpr const char* kPointEnv = "CTRAINER_BENCH_SCALING_POINT";    // value: Point as JSON
constexpr const char* kOutputEnv = "CTRAINER_BENCH_SCALING_OUTPUT";  // the Trainer's output_dir
constexpr uint64_t kInitSeed = 1234;
constexpr double kMB = 1e6;  // decimal megabytes, as the other scenarios report memory

/// One measured configuration.
struct Point {
  int64_t batch = 16;  ///< per process
  int64_t seq = 64;
  int64_t hidden = 256;
  int64_t layers = 4;
  int64_t vocab = 30522;
  int64_t processes = 1;
  int64_t threads = 1;  ///< intra-op threads per process
  int64_t warmup_steps = 2;
  int64_t measured_steps = 6;

  int64_t heads() const { return std::max<int64_t>(1, hidden / 64); }
  int64_t ffn() const { return 4 * hidden; }
  /// Identifies the measurement: sweeps that share a point share its measurement.
  std::string key() const {
    return fmt::format("b{}_s{}_h{}_p{}x{}", batch, seq, hidden, processes, threads);
  }
  json to_json() const {
    return {{"batch", batch},
            {"seq", seq},
            {"hidden", hidden},
            {"layers", layers},
            {"vocab", vocab},
            {"processes", processes},
            {"threads", threads},
            {"warmup_steps", warmup_steps},
            {"measured_steps", measured_steps}};
  }
  static Point from_json(const json& j) {
    Point p;
    p.batch = j.at("batch");
    p.seq = j.at("seq");
    p.hidden = j.at("hidden");
    p.layers = j.at("layers");
    p.vocab = j.at("vocab");
    p.processes = j.at("processes");
    p.threads = j.at("threads");
    p.warmup_steps = j.at("warmup_steps");
    p.measured_steps = j.at("measured_steps");
    return p;
  }
  BertConfig bert_config() const {
    BertConfig c;
    c.vocab_size = vocab;
    c.hidden_size = hidden;
    c.num_hidden_layers = layers;
    c.num_attention_heads = heads();
    c.intermediate_size = ffn();
    c.set_num_labels(2);
    return c;
  }
};

/// A variable swept with the others at the baseline.
struct Sweep {
  std::string name;   ///< metrics.sweeps.<name>, file names of the charts
  std::string title;  ///< what the charts' titles call it
  std::string label;  ///< the x axis
  bool log_x;
  std::vector<Point> points;
  std::function<double(const Point&)> x;
};

std::vector<Sweep> sweeps(bool quick) {
  Point base;
  // --quick: a 1-layer, 64-wide model on a 1000-word vocabulary, 2 points per sweep.
  if (quick) {
    base.batch = 4;
    base.seq = 16;
    base.hidden = 64;
    base.layers = 1;
    base.vocab = 1000;
    base.warmup_steps = 1;
    base.measured_steps = 2;
  }
  // The batch, sequence and width sweeps use every core in one process, as the Trainer does.
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  base.threads = cores;
  const auto vary = [&](auto set, std::vector<int64_t> values) {
    std::vector<Point> out;
    for (int64_t v : values) {
      Point p = base;
      set(p, v);
      out.push_back(p);
    }
    return out;
  };
  std::vector<Sweep> out;
  out.push_back({"batch_size", "batch size", "batch size (per process)", true,
                 vary([](Point& p, int64_t v) { p.batch = v; },
                      quick ? std::vector<int64_t>{2, 4} : std::vector<int64_t>{4, 8, 16, 32, 64}),
                 [](const Point& p) { return static_cast<double>(p.batch); }});
  out.push_back(
      {"seq_len", "sequence length", "sequence length (tokens)", true,
       vary([](Point& p, int64_t v) { p.seq = v; },
            quick ? std::vector<int64_t>{16, 32} : std::vector<int64_t>{32, 64, 128, 256}),
       [](const Point& p) { return static_cast<double>(p.seq); }});
  out.push_back(
      {"hidden_size", "model width", "hidden size (heads = hidden / 64, ffn = 4 × hidden)", false,
       vary([](Point& p, int64_t v) { p.hidden = v; },
            quick ? std::vector<int64_t>{64, 128} : std::vector<int64_t>{64, 128, 256, 384, 512}),
       [](const Point& p) { return static_cast<double>(p.hidden); }});
  // 1 × 1, 1 × 2 and 2 × 1 (processes × threads); --quick keeps the two single-thread points.
  std::vector<Point> processes;
  for (const auto& [procs, threads] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 2}, {2, 1}}) {
    if (quick && threads == 2) continue;
    Point p = base;
    p.processes = procs;
    p.threads = threads;
    processes.push_back(p);
  }
  out.push_back({"processes", "processes and threads", "cores used (processes × intra-op threads)",
                 false, processes,
                 [](const Point& p) { return static_cast<double>(p.processes * p.threads); }});
  return out;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

/// The resident set now (/proc/self/status VmRSS), in bytes.
int64_t rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Worker

void measure_in_worker(const std::string& out_prefix) {
  const int64_t rss_at_start = rss_bytes();
  const Point p = Point::from_json(json::parse(env_or(kPointEnv, "{}")));
  at::set_num_threads(static_cast<int>(p.threads));
  const int64_t rank = std::stoll(env_or("RANK", "0"));
  const int64_t steps = p.warmup_steps + p.measured_steps;
  // Every step a fresh batch of random tokens per rank (the distributed sampler splits them).
  const int64_t n = p.batch * p.processes * steps;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(kInitSeed);
  auto data = std::make_shared<TensorDataset>(std::map<std::string, at::Tensor>{
      {"input_ids", at::randint(0, p.vocab, {n, p.seq}, gen, at::kLong)},
      {"labels", at::randint(0, 2, {n}, gen, at::kLong)}});
  TrainingArguments args;
  args.output_dir =
      env_or(kOutputEnv, (fs::temp_directory_path() / "ctrainer_bench_scaling").string());
  args.use_cpu = true;
  args.per_device_train_batch_size = p.batch;
  args.max_steps = steps;
  args.learning_rate = 1e-4;
  args.warmup_ratio = 0.1;
  args.save_strategy = SaveStrategy::kNo;
  args.logging_steps = static_cast<double>(steps);
  args.disable_tqdm = true;
  args.log_level = LogLevel::kError;
  args.log_level_replica = LogLevel::kError;
  torch::manual_seed(kInitSeed);
  auto model = std::make_shared<BertForSequenceClassification>(p.bert_config());
  const int64_t parameters = model->num_parameters();
  auto timer = std::make_shared<StepTimer>();
  Trainer trainer(model, args, {.train_dataset = data, .callbacks = {timer}});
  trainer.pop_callback("PrinterCallback");
  trainer.train();
  if (static_cast<int64_t>(timer->seconds.size()) != steps)
    throw std::runtime_error(fmt::format("scaling: the Trainer ran {} steps, expected {}",
                                         timer->seconds.size(), steps));
  const std::vector<double> measured(timer->seconds.begin() + p.warmup_steps, timer->seconds.end());
  const json out = {{"rank", rank},
                    {"threads", at::get_num_threads()},
                    {"parameters", parameters},
                    {"rss_at_start_bytes", rss_at_start},
                    {"step_seconds", measured}};
  std::ofstream(fmt::format("{}.{}.json", out_prefix, rank)) << out.dump() << '\n';
}

/// The worker process: measures, writes its report and exits (0, or 3 after printing the
/// error; the parent then names the failed rank).
[[noreturn]] void run_worker(const std::string& out_prefix) {
  try {
    measure_in_worker(out_prefix);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ctrainer-bench scaling worker (RANK=%s): %s\n",
                 env_or("RANK", "0").c_str(), error.what());
    std::exit(3);
  }
  std::exit(0);
}

// ---------------------------------------------------------------------------------------------
// Parent

/// One run of a point: rank 0's median measured step, and the peak resident set of the
/// largest process (every rank holds the same model, so they differ little).
struct Run {
  double step_seconds;
  double peak_rss_mb;
  double rss_at_start_mb;
  int64_t parameters;
};

Run run_point(const Point& p) {
  const fs::path output =
      fs::temp_directory_path() / fmt::format("ctrainer_bench_scaling_{}_output", getpid());
  WorkerLaunch launch{"scaling", kWorkerEnv, static_cast<int>(p.processes), {}};
  launch.env.push_back(fmt::format("{}={}", kPointEnv, p.to_json().dump()));
  launch.env.push_back(fmt::format("{}={}", kOutputEnv, output.string()));
  // libtorch's OpenMP pool reads it at start-up, and the Trainer then keeps the thread count.
  launch.env.push_back(fmt::format("OMP_NUM_THREADS={}", p.threads));
  const auto reports = run_workers(launch);
  fs::remove_all(output);
  Run run{median(reports[0]["step_seconds"].get<std::vector<double>>()), 0, 0,
          reports[0]["parameters"].get<int64_t>()};
  for (const auto& r : reports) {
    run.peak_rss_mb = std::max(run.peak_rss_mb, r["max_rss_bytes"].get<double>() / kMB);
    run.rss_at_start_mb =
        std::max(run.rss_at_start_mb, r["rss_at_start_bytes"].get<double>() / kMB);
  }
  return run;
}

/// samples/s, tokens/s and peak RSS of one point over the rounds.
json summarize(const Point& p, const std::vector<Run>& runs) {
  std::vector<double> step_ms, peak_mb, start_mb;
  for (const auto& r : runs) {
    step_ms.push_back(1000 * r.step_seconds);
    peak_mb.push_back(r.peak_rss_mb);
    start_mb.push_back(r.rss_at_start_mb);
  }
  const double step = median(step_ms);
  const double samples = static_cast<double>(p.batch * p.processes) / (step / 1000);
  json out = p.to_json();
  out["heads"] = p.heads();
  out["ffn"] = p.ffn();
  out["parameters"] = runs.front().parameters;
  out["step_ms"] = step;
  out["step_ms_min"] = *std::min_element(step_ms.begin(), step_ms.end());
  out["step_ms_max"] = *std::max_element(step_ms.begin(), step_ms.end());
  out["step_ms_per_round"] = step_ms;
  out["samples_per_s"] = samples;
  out["tokens_per_s"] = samples * static_cast<double>(p.seq);
  out["peak_rss_mb"] = median(peak_mb);
  out["peak_rss_mb_per_round"] = peak_mb;
  out["rss_at_start_mb"] = median(start_mb);
  return out;
}

/// One chart per swept variable and quantity; returns the file names written.
std::vector<std::string> write_plots(const std::vector<Sweep>& all, const json& points,
                                     const std::string& dir, int64_t rounds) {
  const Point& base = all.front().points.back();
  std::vector<std::string> files;
  const auto value = [&](const Point& p, const char* what) {
    return points[p.key()][what].get<double>();
  };
  for (const auto& sweep : all) {
    for (const auto& [what, y_label, title] :
         std::vector<std::tuple<const char*, std::string, std::string>>{
             {"samples_per_s", "samples/s", "Training throughput"},
             {"peak_rss_mb", "peak RSS per process (MB)", "Peak memory"}}) {
      plot::SvgLineChart chart(title + " vs " + sweep.title);
      chart.subtitle(fmt::format(
          "BERT, {} layer{}, vocab {}; batch {}, seq {}, hidden {} unless swept; median of {} "
          "run{}",
          base.layers, base.layers == 1 ? "" : "s", base.vocab, all[1].points.front().batch,
          all[0].points.front().seq, all[0].points.front().hidden, rounds, rounds == 1 ? "" : "s"));
      chart.x_label(sweep.label).y_label(y_label).x_log_scale(sweep.log_x);
      std::vector<double> ticks;
      if (sweep.name == "processes") {
        // Two ways to use the cores: intra-op threads in one process, or DDP processes.
        std::vector<plot::Point> threads, procs;
        for (const auto& p : sweep.points) {
          if (p.processes == 1) threads.push_back({sweep.x(p), value(p, what)});
          if (p.threads == 1) procs.push_back({sweep.x(p), value(p, what)});
          ticks.push_back(sweep.x(p));
        }
        chart.add_series("1 process, N intra-op threads", threads);
        chart.add_series("N processes × 1 thread (DDP, Gloo)", procs);
      } else {
        std::vector<plot::Point> line;
        for (const auto& p : sweep.points) {
          line.push_back({sweep.x(p), value(p, what)});
          ticks.push_back(sweep.x(p));
        }
        chart.add_series(fmt::format("1 process × {} threads", sweep.points.front().threads), line);
        // What the process holds before building anything (libtorch, the allocator's arenas):
        // the part of the peak that no configuration changes.
        if (what == std::string("peak_rss_mb")) {
          std::vector<plot::Point> start;
          for (const auto& p : sweep.points)
            start.push_back({sweep.x(p), value(p, "rss_at_start_mb")});
          chart.add_series("the same process at start", start);
        }
      }
      std::sort(ticks.begin(), ticks.end());
      ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
      chart.x_ticks(ticks);
      const std::string file =
          fmt::format("scaling_{}_{}.svg", sweep.name,
                      what == std::string("samples_per_s") ? "throughput" : "peak_rss");
      chart.write((fs::path(dir) / file).string());
      files.push_back(file);
    }
  }
  return files;
}

BenchResult run_scaling(const BenchOptions& options) {
  if (const char* prefix = std::getenv(kWorkerEnv)) run_worker(prefix);
  const auto all = sweeps(options.quick);
  const int64_t rounds = options.quick ? 1 : options.rounds;
  const double load_before = load_average();

  std::vector<Point> unique;
  for (const auto& sweep : all)
    for (const auto& p : sweep.points)
      if (std::none_of(unique.begin(), unique.end(),
                       [&](const Point& u) { return u.key() == p.key(); }))
        unique.push_back(p);
  std::map<std::string, std::vector<Run>> runs;
  for (int64_t round = 0; round < rounds; ++round)
    for (std::size_t i = 0; i < unique.size(); ++i) {
      const Point& p = unique[(i + static_cast<std::size_t>(round)) % unique.size()];
      runs[p.key()].push_back(run_point(p));
    }

  BenchResult result;
  result.scenario = "scaling";
  const Point& base = all.front().points.front();
  result.config["model"] = fmt::format(
      "BertForSequenceClassification, {} layer{}, vocab {}, dropout 0.1, heads = hidden / 64, "
      "ffn = 4 × hidden, 2 labels; random tokens, no padding",
      base.layers, base.layers == 1 ? "" : "s", base.vocab);
  result.config["trainer"] =
      "Trainer on CPU: AdamW lr 1e-4, linear schedule, warmup_ratio 0.1, max_grad_norm 1.0, "
      "random sampler; 2 processes = DDPStrategy over Gloo (torchrun environment)";
  result.config["steps_per_run"] =
      fmt::format("{} warm-up + {} measured (median per run; table = median over runs)",
                  base.warmup_steps, base.measured_steps);
  result.config["step"] =
      "on_step_begin to on_step_end: batch gathering, forward, backward (with DDP's all-reduce), "
      "clipping, optimizer and scheduler step";
  result.config["memory"] =
      "peak resident set (wait4 ru_maxrss) of the child process that trained the point, max over "
      "ranks; decimal MB; rss_at_start_mb = the same process before building anything";
  result.config["rounds"] = rounds;
  result.config["hardware_threads"] = std::thread::hardware_concurrency();
  result.config["load_average_1min"] = {{"before", load_before}, {"after", load_average()}};
  json sweeps_config = json::object();
  for (const auto& s : all) {
    std::vector<std::string> keys;
    for (const auto& p : s.points) keys.push_back(p.key());
    sweeps_config[s.name] = keys;
  }
  result.config["sweeps"] = sweeps_config;

  json points = json::object();
  for (const auto& p : unique) points[p.key()] = summarize(p, runs[p.key()]);
  result.metrics["points"] = points;
  result.header = {"sweep",
                   "batch",
                   "seq",
                   "hidden",
                   "processes x threads",
                   "step ms",
                   "step ms min..max",
                   "samples/s",
                   "tokens/s",
                   "peak RSS MB"};
  for (const auto& s : all) {
    json series = json::array();
    for (const auto& p : s.points) {
      const json& m = points[p.key()];
      series.push_back({{"value", s.x(p)},
                        {"point", p.key()},
                        {"step_ms", m["step_ms"]},
                        {"samples_per_s", m["samples_per_s"]},
                        {"tokens_per_s", m["tokens_per_s"]},
                        {"peak_rss_mb", m["peak_rss_mb"]}});
      result.rows.push_back(
          {{s.name, std::to_string(p.batch), std::to_string(p.seq), std::to_string(p.hidden),
            fmt::format("{} x {}", p.processes, p.threads),
            fmt::format("{:.1f}", m["step_ms"].get<double>()),
            fmt::format("{:.1f}..{:.1f}", m["step_ms_min"].get<double>(),
                        m["step_ms_max"].get<double>()),
            fmt::format("{:.1f}", m["samples_per_s"].get<double>()),
            fmt::format("{:.0f}", m["tokens_per_s"].get<double>()),
            fmt::format("{:.0f}", m["peak_rss_mb"].get<double>())}});
    }
    result.metrics["sweeps"][s.name] = series;
  }
  // Headline numbers.
  const auto sps = [&](const Point& p) { return points[p.key()]["samples_per_s"].get<double>(); };
  const auto& batch = all[0].points;
  result.metrics["throughput_gain_largest_vs_smallest_batch"] =
      sps(batch.back()) / sps(batch.front());
  const auto& procs = all[3].points;
  const auto find = [&](int64_t n, int64_t t) -> const Point* {
    for (const auto& p : procs)
      if (p.processes == n && p.threads == t) return &p;
    return nullptr;
  };
  if (const Point* one = find(1, 1), *two = find(2, 1); one && two)
    result.metrics["scaling_efficiency_2proc"] = sps(*two) / (2 * sps(*one));
  if (const Point* threads = find(1, 2), *two = find(2, 1); threads && two)
    result.metrics["speedup_2proc_vs_1proc_2threads"] = sps(*two) / sps(*threads);

  if (!options.plots_dir.empty())
    result.plots = write_plots(all, points, options.plots_dir, rounds);
  return result;
}

}  // namespace

Scenario scaling_scenario() {
  return {"scaling",
          "BERT training (Trainer): samples/s, tokens/s, peak RSS vs batch, sequence, width, "
          "processes",
          run_scaling};
}

}  // namespace ctrainer::bench
