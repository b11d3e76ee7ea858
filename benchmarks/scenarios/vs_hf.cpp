// Scenario vs_hf: ctrainer's run_glue against transformers' Trainer (HF's run_glue.py recipe,
// benchmarks/reference/hf_trainer_glue.py) and a plain PyTorch loop (torch_loop_glue.py) on the
// same GLUE workloads, each side a separate process with 2 intra-op threads:
//  - W1: a small BERT (h128/L2/A4) from scratch on SST-2 at batch 8 and 32;
//  - W2: the pretrained all-MiniLM-L6-v2 fine-tuned on MRPC and on an SST-2 slice;
//  - W3: BERT-base's shape from scratch, 20 steps on MRPC, with achieved FLOP/s against the
//    machine's GEMM FLOP/s measured in this process.
// The sides take turns (--rounds rounds, the order rotated each round so that drifts of a shared
// machine hit every side alike). Per side: train_samples_per_second, process start to the end of
// the first optimizer step, peak RSS (wait4), train_loss, dev metric; median, min and max over
// the rounds, ratios against HF and the plain loop, and the targets of issue 17.
// `--device cuda --bf16` is the GPU recipe (benchmarks/gpu/README.md): the same workloads in
// bf16 on CUDA on every side, with MFU against a bf16 matmul.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <torch/cuda.h>

#include "bench_commands.h"
#include "bench_process.h"
#include "bench_report.h"
#include "bench_workers.h"
#include "vs_hf/vs_hf_flops.h"
#include "vs_hf/vs_hf_sides.h"

namespace ctrainer::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace vs_hf;

constexpr int kThreads = 2;
constexpr int64_t kDefaultRounds = 3;
// A side that runs longer than this is killed and reported (W2 MRPC's 3 epochs take the
// longest: tens of minutes per side on 2 cores).
constexpr double kSideTimeoutSeconds = 3 * 3600, kQuickSideTimeoutSeconds = 600;
// Targets of issue 17 (the per-workload samples/s targets are Workload::speed_target).
constexpr double kRssTarget = 0.8, kFirstStepTarget = 0.3, kDevPointsTarget = 0.5,
                 kGemmFractionTarget = 0.70;

/// The scenario's own flags, checked.
struct VsHfOptions {
  std::vector<Workload> workloads;
  RunSettings settings;
  std::string optim_reason;
  int64_t rounds = kDefaultRounds;
  /// Round r uses seeds[r % size] on every side: with several seeds, the medians compare the
  /// sides over seeds rather than over one seed's draws (initial weights, dropout, order).
  std::vector<int64_t> seeds = {42};
  bool keep_runs = false;
  std::optional<int64_t> max_steps_cap;  ///< --max_steps: a functional check, not the workloads
};

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

std::string flag_or(const BenchOptions& o, const std::string& name, const std::string& fallback) {
  const auto it = o.flags.find(name);
  return it == o.flags.end() ? fallback : it->second;
}

VsHfOptions parse_options(const BenchOptions& options) {
  VsHfOptions o;
  o.rounds = options.quick ? 1 : options.rounds_given ? options.rounds : kDefaultRounds;
  o.keep_runs = options.flags.count("keep_runs") > 0;
  // The quick smoke test covers both kinds of model (from scratch with a vocabulary file, and a
  // pretrained folder with its own tokenizer) and both kinds of metric (accuracy; accuracy and
  // F1 on sentence pairs): about 30 s on a quiet 2-core machine, mostly Python's imports.
  const auto all = all_workloads(options.quick);
  const std::string names_all = workload_names(all, true);
  const std::string names_default =
      workload_names(all, flag_or(options, "device", "cpu") == "cuda");
  const std::string wanted =
      flag_or(options, "workloads", options.quick ? "w1_b8,w2_mrpc" : names_default);
  for (const auto& name : split_list(wanted)) {
    const auto it = std::find_if(all.begin(), all.end(), [&](auto& w) { return w.name == name; });
    if (it == all.end())
      throw std::runtime_error("--workloads: unknown workload '" + name + "' (known: " + names_all +
                               ")");
    o.workloads.push_back(*it);
  }
  if (o.workloads.empty()) throw std::runtime_error("--workloads names no workload");
  if (const auto seeds = options.flags.find("seeds"); seeds != options.flags.end()) {
    o.seeds.clear();
    for (const auto& item : split_list(seeds->second)) {
      std::size_t used = 0;
      int64_t seed = -1;
      try {
        seed = std::stoll(item, &used);
      } catch (const std::exception&) {
      }
      if (used != item.size() || seed < 0)
        throw std::runtime_error("--seeds expects comma-separated non-negative integers, got '" +
                                 seeds->second + "'");
      o.seeds.push_back(seed);
    }
    if (o.seeds.empty()) throw std::runtime_error("--seeds names no seed");
    if (static_cast<int64_t>(o.seeds.size()) > o.rounds)
      throw std::runtime_error(fmt::format(
          "--seeds names {} seeds but only {} rounds run (round r uses the r-th seed): pass "
          "--rounds {} or fewer seeds",
          o.seeds.size(), o.rounds, o.seeds.size()));
  }
  if (const auto cap = options.flags.find("max_steps"); cap != options.flags.end()) {
    int64_t steps = 0;
    try {
      steps = std::stoll(cap->second);
    } catch (const std::exception&) {
    }
    if (steps < 1)
      throw std::runtime_error("--max_steps expects a positive integer, got '" + cap->second + "'");
    o.max_steps_cap = steps;
    for (auto& w : o.workloads) {
      w.max_steps = w.max_steps > 0 ? std::min(w.max_steps, steps) : steps;
      w.description += fmt::format(" [capped at {} steps by --max_steps]", w.max_steps);
    }
  }

  const std::string device = flag_or(options, "device", "cpu");
  if (device != "cpu" && device != "cuda")
    throw std::runtime_error("--device must be cpu or cuda, got '" + device + "'");
  o.settings.cuda = device == "cuda";
  o.settings.bf16 = options.flags.count("bf16") > 0;
  if (o.settings.cuda && !torch::cuda::is_available())
    throw std::runtime_error(
        "--device cuda: no CUDA device is visible to this process (torch::cuda::is_available() "
        "is false: no GPU, CUDA_VISIBLE_DEVICES hides it, or a CPU-only build); run the GPU "
        "recipe on a GPU machine (benchmarks/gpu/README.md) or drop --device cuda");
  const std::string padding = flag_or(options, "padding", "max_length");
  if (padding != "max_length" && padding != "dynamic")
    throw std::runtime_error("--padding must be max_length or dynamic, got '" + padding + "'");
  o.settings.dynamic_padding = padding == "dynamic";
  o.settings.full_last_layer = options.flags.count("full_last_layer") > 0;
  o.settings.threads = kThreads;
  o.settings.optim = flag_or(options, "optim", "auto");
  if (o.settings.optim != "auto" && o.settings.optim != "adamw_torch" &&
      o.settings.optim != "adamw_torch_fused")
    throw std::runtime_error("--optim must be auto, adamw_torch or adamw_torch_fused, got '" +
                             o.settings.optim + "'");
  return o;
}

/// HF's default optimizer on torch >= 2.8 is adamw_torch_fused; every side gets the same one,
/// so `auto` falls back to adamw_torch everywhere while our run_glue does not offer it.
void choose_optimizer(VsHfOptions& o, const RunGlueFeatures& features) {
  std::string& optim = o.settings.optim;
  if (optim == "adamw_torch_fused" && !features.fused_adamw)
    throw std::runtime_error(
        "--optim adamw_torch_fused: this run_glue does not accept it yet (its --help lists the "
        "optimizers it has); use --optim adamw_torch or auto");
  if (optim == "auto") {
    optim = features.fused_adamw ? "adamw_torch_fused" : "adamw_torch";
    o.optim_reason = features.fused_adamw
                         ? "auto: HF's default on torch >= 2.8, given to every side"
                         : "auto: run_glue does not offer adamw_torch_fused (HF's default on "
                           "torch >= 2.8) yet, so every side uses adamw_torch";
  } else {
    o.optim_reason = "--optim " + optim + ", given to every side";
  }
}

/// Runs one side once in `run_dir`; throws with its command and stderr tail when it fails.
SideRun run_side(Side side, const Workload& w, const Paths& paths, const VsHfOptions& o,
                 int64_t seed, const std::string& run_dir, double timeout,
                 std::string& command_text) {
  fs::remove_all(run_dir);
  fs::create_directories(run_dir);
  RunSettings settings = o.settings;
  settings.seed = seed;
  const auto cmd = side_command(side, w, paths, settings, run_dir);
  command_text = join_command(cmd);
  ChildSpec spec{
      cmd,
      {fmt::format("OMP_NUM_THREADS={}", kThreads), fmt::format("MKL_NUM_THREADS={}", kThreads),
       "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "HF_DATASETS_OFFLINE=1", "PYTHONUNBUFFERED=1",
       // no __pycache__ in the source tree (transformers' own .pyc exist already)
       "PYTHONDONTWRITEBYTECODE=1"},
      run_dir + "/stdout.log",
      run_dir + "/stderr.log",
      timeout};
  const ChildResult child = run_child(spec);
  const auto failure = [&](const std::string& what) {
    std::string tail = file_tail(spec.stderr_path, 30);
    std::string from = spec.stderr_path;
    if (tail.empty()) {
      tail = file_tail(spec.stdout_path, 30);
      from = spec.stdout_path;
    }
    return std::runtime_error(fmt::format(
        "side {} on workload {} {}\n  command: {}\n  its output is kept in {}\n  last lines of "
        "{}:\n{}",
        side_name(side), w.name, what, command_text, run_dir, from, tail));
  };
  if (!child.ok()) throw failure("failed (" + child.describe(timeout) + ")");
  try {
    SideRun run = read_side_result(side, w, run_dir, child.spawn_unix_time, child.max_rss_kb);
    run.process_wall_s = child.wall_seconds;
    if (!o.keep_runs) fs::remove_all(run_dir);
    return run;
  } catch (const std::exception& error) {
    throw failure(std::string("did not report a training run: ") + error.what());
  }
}

/// median / min / max / per_round of `values` (null when there are none).
json stat(const std::vector<double>& values) {
  if (values.empty()) return nullptr;
  return {{"median", median(values)},
          {"min", *std::min_element(values.begin(), values.end())},
          {"max", *std::max_element(values.begin(), values.end())},
          {"per_round", values}};
}

/// The per-round values of one quantity of one side (rounds where it is missing left out).
template <typename Get>
std::vector<double> collect(const std::vector<SideRun>& runs, Get get) {
  std::vector<double> values;
  for (const auto& run : runs)
    if (const std::optional<double> v = get(run)) values.push_back(*v);
  return values;
}

/// One target: `value` compared with `threshold` by `op` (">=", "<=", "|x|<=").
json target(const std::string& op, double threshold, const json& value) {
  json t = {{"op", op}, {"target", threshold}, {"value", value}, {"met", nullptr}};
  if (value.is_number()) {
    const double v = value.get<double>();
    t["met"] = op == ">=" ? v >= threshold : op == "<=" ? v <= threshold : std::abs(v) <= threshold;
  }
  return t;
}

std::string fixed(double value, int digits) {
  return fmt::format("{:.{}f}", value, digits);
}

/// "12.3 (11.9-12.8)": the median and, with several rounds, the range.
std::string cell(const json& s, int digits) {
  if (s.is_null()) return "missing";
  std::string out = fixed(s["median"].get<double>(), digits);
  if (s["per_round"].size() > 1)
    out += " (" + fixed(s["min"].get<double>(), digits) + "-" +
           fixed(s["max"].get<double>(), digits) + ")";
  return out;
}

std::string ratio_cell(const json& value, int digits = 2, const std::string& unit = "x") {
  return value.is_number() ? fixed(value.get<double>(), digits) + unit : "missing";
}

std::string target_cell(const json& t, const std::string& unit = "x") {
  const std::string op = t["op"] == "|x|<=" ? "|ours-HF| <=" : t["op"].get<std::string>();
  return op + " " + fixed(t["target"].get<double>(), 2) + unit;
}

std::string met_cell(const json& t) {
  return t["met"].is_null() ? "missing" : t["met"].get<bool>() ? "met" : "NOT MET";
}

/// The median of `a` / the median of `b` for one quantity, null when either is missing.
json ratio(const json& sides, const std::string& a, const std::string& b, const std::string& key) {
  const json& x = sides[a][key];
  const json& y = sides[b][key];
  if (x.is_null() || y.is_null()) return nullptr;
  return x["median"].get<double>() / y["median"].get<double>();
}

/// The difference of the medians in points (x100), null when either is missing.
json points(const json& sides, const std::string& a, const std::string& b, const std::string& key) {
  const json& x = sides[a][key];
  const json& y = sides[b][key];
  if (x.is_null() || y.is_null()) return nullptr;
  return 100 * (x["median"].get<double>() - y["median"].get<double>());
}

/// Training FLOPs per sample: the model's (what HF's Trainer and the plain loop compute) and
/// what our run_glue computes.
struct WorkloadFlops {
  double model = 0, ctrainer = 0;
};

/// Aggregates one workload's runs into metrics and table rows.
void report_workload(const Workload& w, const std::map<Side, std::vector<SideRun>>& runs,
                     const WorkloadFlops& flops, double gemm_flops, const VsHfOptions& o,
                     BenchResult& result) {
  const bool mrpc = w.task == "mrpc";
  const bool flops_known = !o.settings.dynamic_padding;  // else the token count varies
  json sides;
  for (const Side side : kSides) {
    const auto& r = runs.at(side);
    json& s = sides[side_name(side)];
    // The FLOPs this side computes: ours skip most of the last layer (see vs_hf_flops.h).
    const double flops_per_sample = side == Side::kCtrainer ? flops.ctrainer : flops.model;
    s["samples_per_s"] = stat(collect(r, [](auto& x) { return std::optional(x.samples_per_s); }));
    s["train_runtime_s"] =
        stat(collect(r, [](auto& x) { return std::optional(x.train_runtime_s); }));
    s["start_to_first_step_s"] = stat(collect(r, [](auto& x) { return x.start_to_first_step_s; }));
    s["process_wall_s"] = stat(collect(r, [](auto& x) { return std::optional(x.process_wall_s); }));
    s["peak_rss_mb"] = stat(collect(r, [](auto& x) { return std::optional(x.peak_rss_mb); }));
    s["train_loss"] = stat(collect(r, [](auto& x) { return std::optional(x.train_loss); }));
    s["dev_accuracy"] = stat(collect(r, [](auto& x) { return std::optional(x.dev_accuracy); }));
    s["dev_f1"] = stat(collect(r, [](auto& x) { return x.dev_f1; }));
    if (flops_known) {
      s["achieved_gflops"] = stat(collect(
          r, [&](auto& x) { return std::optional(x.samples_per_s * flops_per_sample / 1e9); }));
      s["fraction_of_gemm_peak"] = stat(collect(r, [&](auto& x) {
        return std::optional(x.samples_per_s * flops_per_sample / gemm_flops);
      }));
    }
    if (side == Side::kCtrainer)
      s["profiled_step_ms"] = stat(collect(r, [](auto& x) { return x.profiled_step_ms; }));
    if (side == Side::kCtrainer && flops_known)  // FLOP/s of the profiled steps alone
      s["achieved_gflops_profiled_steps"] = stat(collect(r, [&](auto& x) {
        return x.profiled_step_ms
                   ? std::optional(flops_per_sample * w.train_batch / (*x.profiled_step_ms * 1e6))
                   : std::nullopt;
      }));
    json phases = json::object();  // ours with --profile_steps: the median of each phase
    for (const auto& run : r)
      if (run.phases_ms_per_step.is_object())
        for (const auto& [phase, ms] : run.phases_ms_per_step.items())
          if (ms.is_number()) phases[phase].push_back(ms.get<double>());
    for (auto& [phase, values] : phases.items()) values = median(values.get<std::vector<double>>());
    if (!phases.empty()) s["phases_ms_per_step"] = phases;
    if (!r.empty() && !r.front().extra.empty()) s["versions"] = r.front().extra;
  }
  json ratios;
  for (const std::string other : {"hf_trainer", "torch_loop"}) {
    const std::string suffix = other == "hf_trainer" ? "_vs_hf" : "_vs_torch_loop";
    for (const std::string key : {"samples_per_s", "peak_rss_mb", "start_to_first_step_s"})
      ratios[key + suffix] = ratio(sides, "ctrainer", other, key);
    ratios["dev_accuracy_points" + suffix] = points(sides, "ctrainer", other, "dev_accuracy");
    if (mrpc) ratios["dev_f1_points" + suffix] = points(sides, "ctrainer", other, "dev_f1");
  }
  json targets;
  targets["samples_per_s_vs_hf"] = target(">=", w.speed_target, ratios["samples_per_s_vs_hf"]);
  targets["peak_rss_vs_hf"] = target("<=", kRssTarget, ratios["peak_rss_mb_vs_hf"]);
  targets["start_to_first_step_vs_hf"] =
      target("<=", kFirstStepTarget, ratios["start_to_first_step_s_vs_hf"]);
  targets["dev_accuracy_points_vs_hf"] =
      target("|x|<=", kDevPointsTarget, ratios["dev_accuracy_points_vs_hf"]);
  if (mrpc)
    targets["dev_f1_points_vs_hf"] =
        target("|x|<=", kDevPointsTarget, ratios["dev_f1_points_vs_hf"]);
  if (w.dev_accuracy_floor)
    targets["dev_accuracy"] =
        target(">=", *w.dev_accuracy_floor, sides["ctrainer"]["dev_accuracy"]["median"]);
  if (w.flops_target && flops_known)
    targets["fraction_of_gemm_peak"] =
        target(">=", kGemmFractionTarget, sides["ctrainer"]["fraction_of_gemm_peak"]["median"]);
  result.metrics[w.name] = {{"sides", sides}, {"ratios", ratios}, {"targets", targets}};

  // Table: one row per quantity; the ratio columns are ours / theirs (points for metrics).
  const auto row = [&](const std::string& what, const std::string& key, int digits,
                       const std::string& vs_hf, const std::string& vs_loop, const json* t,
                       const std::string& unit = "x") {
    result.rows.push_back(
        {{w.name, what, cell(sides["ctrainer"][key], digits),
          cell(sides["hf_trainer"][key], digits), cell(sides["torch_loop"][key], digits), vs_hf,
          vs_loop, t ? target_cell(*t, unit) : "-", t ? met_cell(*t) : "-"}});
  };
  row("samples/s", "samples_per_s", 1, ratio_cell(ratios["samples_per_s_vs_hf"]),
      ratio_cell(ratios["samples_per_s_vs_torch_loop"]), &targets["samples_per_s_vs_hf"]);
  row("start->1st step s", "start_to_first_step_s", 2,
      ratio_cell(ratios["start_to_first_step_s_vs_hf"]),
      ratio_cell(ratios["start_to_first_step_s_vs_torch_loop"]),
      &targets["start_to_first_step_vs_hf"]);
  row("peak RSS MB", "peak_rss_mb", 0, ratio_cell(ratios["peak_rss_mb_vs_hf"]),
      ratio_cell(ratios["peak_rss_mb_vs_torch_loop"]), &targets["peak_rss_vs_hf"]);
  row("train loss", "train_loss", 4, "-", "-", nullptr);
  row("dev accuracy", "dev_accuracy", 4, ratio_cell(ratios["dev_accuracy_points_vs_hf"], 2, " pt"),
      ratio_cell(ratios["dev_accuracy_points_vs_torch_loop"], 2, " pt"),
      &targets["dev_accuracy_points_vs_hf"], " pt");
  if (w.dev_accuracy_floor)
    row("dev accuracy (ours)", "dev_accuracy", 4, "-", "-", &targets["dev_accuracy"], "");
  if (mrpc)
    row("dev F1", "dev_f1", 4, ratio_cell(ratios["dev_f1_points_vs_hf"], 2, " pt"),
        ratio_cell(ratios["dev_f1_points_vs_torch_loop"], 2, " pt"),
        &targets["dev_f1_points_vs_hf"], " pt");
  if (flops_known) {
    row("achieved GFLOP/s", "achieved_gflops", 1, "-", "-", nullptr);
    row(o.settings.cuda ? "MFU (of bf16 matmul)" : "of GEMM FLOP/s", "fraction_of_gemm_peak", 3,
        "-", "-",
        targets.contains("fraction_of_gemm_peak") ? &targets["fraction_of_gemm_peak"] : nullptr,
        "");
  }
  const json& profiled = sides["ctrainer"]["achieved_gflops_profiled_steps"];
  if (profiled.is_object())
    result.rows.push_back({{w.name, "ours GFLOP/s, profiled steps", cell(profiled, 1), "-", "-",
                            "-", "-", "-", "-"}});
  if (sides["ctrainer"].contains("phases_ms_per_step")) {
    std::string text = "step " + cell(sides["ctrainer"]["profiled_step_ms"], 1) + ":";
    for (const auto& [phase, ms] : sides["ctrainer"]["phases_ms_per_step"].items())
      if (ms.get<double>() >= 0.05)  // the JSON has every phase; the table the non-zero ones
        text += fmt::format(" {} {:.1f}", phase, ms.get<double>());
    result.rows.push_back({{w.name, "ours ms/step by phase", text, "-", "-", "-", "-", "-", "-"}});
  }
}

json workload_config(const Workload& w, const Paths& paths, const WorkloadFlops& flops) {
  json c = {
      {"description", w.description},
      {"task", w.task},
      {"model", w.config_file.empty() ? paths.minilm : "examples/data/configs/" + w.config_file},
      {"max_seq_length", w.max_seq_length},
      {"per_device_train_batch_size", w.train_batch},
      {"per_device_eval_batch_size", w.eval_batch},
      {"learning_rate", w.learning_rate},
      {"warmup_ratio", w.warmup_ratio},
      {"weight_decay", w.weight_decay},
      {"num_train_epochs", w.epochs},
      {"max_steps", w.max_steps},
      {"training_gflops_per_sample", flops.model / 1e9},
      {"training_gflops_per_sample_ctrainer", flops.ctrainer / 1e9},
      {"samples_per_s_target_vs_hf", w.speed_target}};
  c["max_train_samples"] = w.max_train_samples ? json(*w.max_train_samples) : json(nullptr);
  c["max_eval_samples"] = w.max_eval_samples ? json(*w.max_eval_samples) : json(nullptr);
  return c;
}

BenchResult run_vs_hf(const BenchOptions& options) {
  VsHfOptions o = parse_options(options);
  const bool need_minilm = std::any_of(o.workloads.begin(), o.workloads.end(),
                                       [](auto& w) { return w.config_file.empty(); });
  Paths paths = resolve_paths(need_minilm);
  const RunGlueFeatures features = probe_run_glue(paths);
  choose_optimizer(o, features);
  // --no_profile: on a GPU the profiled steps synchronise after every phase, which the other
  // sides do not pay; without it our start-to-first-step and phases are not measured.
  o.settings.profile_steps = features.profile_steps && options.flags.count("no_profile") == 0;
  const double timeout = options.quick ? kQuickSideTimeoutSeconds : kSideTimeoutSeconds;
  const fs::path runs_root =
      fs::temp_directory_path() / fmt::format("ctrainer_bench_vs_hf_{}", ::getpid());
  if (options.quick) use_sliced_glue_copy(paths, o.workloads, (runs_root / "glue").string(), 64);
  const double load_before = load_average();
  const GemmPeak gemm_before = measure_gemm_peak(o.settings.cuda, o.settings.bf16, kThreads);

  BenchResult result;
  result.scenario = "vs_hf";
  json commands;
  std::map<std::string, std::map<Side, std::vector<SideRun>>> runs;
  std::map<std::string, WorkloadFlops> flops;
  for (const auto& w : o.workloads) {
    const std::string config = w.config_file.empty()
                                   ? paths.minilm + "/config.json"
                                   : paths.examples_data() + "/configs/" + w.config_file;
    const ModelShape shape = read_model_shape(config);
    flops[w.name] = {training_flops_per_sample(shape, w.max_seq_length),
                     o.settings.full_last_layer
                         ? training_flops_per_sample(shape, w.max_seq_length)
                         : ctrainer_training_flops_per_sample(shape, w.max_seq_length)};
    for (int64_t round = 0; round < o.rounds; ++round) {
      for (std::size_t k = 0; k < std::size(kSides); ++k) {
        const Side side = kSides[(k + static_cast<std::size_t>(round)) % std::size(kSides)];
        const std::string run_dir =
            (runs_root / fmt::format("{}_r{}_{}", w.name, round, side_name(side))).string();
        std::fprintf(stderr, "vs_hf: %s round %lld/%lld: %s ...\n", w.name.c_str(),
                     static_cast<long long>(round + 1), static_cast<long long>(o.rounds),
                     side_name(side).c_str());
        std::string command;
        const int64_t seed = o.seeds[static_cast<std::size_t>(round) % o.seeds.size()];
        SideRun run = run_side(side, w, paths, o, seed, run_dir, timeout, command);
        std::fprintf(stderr, "vs_hf:   %.1f samples/s, train_loss %.4f, dev accuracy %.4f\n",
                     run.samples_per_s, run.train_loss, run.dev_accuracy);
        if (round == 0) commands[w.name][side_name(side)] = command;
        runs[w.name][side].push_back(std::move(run));
      }
    }
  }
  const GemmPeak gemm_after = measure_gemm_peak(o.settings.cuda, o.settings.bf16, kThreads);
  const double gemm = std::max(gemm_before.flops_per_s, gemm_after.flops_per_s);
  if (!o.keep_runs) fs::remove_all(runs_root);

  result.header = {"workload", "quantity",  "ctrainer", "hf_trainer", "torch_loop",
                   "ours/HF",  "ours/loop", "target",   "met"};
  result.metrics["gemm"] = {{"gflops", gemm / 1e9},
                            {"gflops_before", gemm_before.flops_per_s / 1e9},
                            {"gflops_after", gemm_after.flops_per_s / 1e9},
                            {"what", gemm_before.what}};
  result.rows.push_back({{"-", o.settings.cuda ? "matmul GFLOP/s (peak)" : "GEMM GFLOP/s",
                          fixed(gemm / 1e9, 1), "-", "-", "-", "-", "-", "-"}});
  for (const auto& w : o.workloads)
    report_workload(w, runs[w.name], flops[w.name], gemm, o, result);

  auto& c = result.config;
  for (const auto& w : o.workloads)
    c["workloads"][w.name] = workload_config(w, paths, flops[w.name]);
  c["commands_round_1"] = commands;
  c["rounds"] = o.rounds;
  c["seeds"] = o.seeds;
  if (o.seeds.size() > 1)
    c["seed_rounds"] =
        "round r runs every side with the r-th seed (cycling): the medians are over seeds";
  if (o.max_steps_cap)
    c["max_steps_cap"] = fmt::format(
        "--max_steps {}: every workload stopped early; a functional check, not its measurement",
        *o.max_steps_cap);
  if (options.quick)
    c["quick"] =
        "a smoke test of the harness on the first 64 rows of each split, 2 steps: no "
        "number here is a measurement";
  c["order"] =
      "per workload, rounds in turn; within a round the sides run one after the other, "
      "the order rotated by one each round (ctrainer, hf_trainer, torch_loop first)";
  c["device"] = o.settings.cuda ? "cuda" : "cpu";
  c["precision"] = o.settings.bf16 ? "bf16 autocast (--bf16) on every side" : "fp32";
  c["threads"] = fmt::format(
      "{} intra-op threads per side (OMP_NUM_THREADS={} for every child, "
      "torch.set_num_threads({}) in Python)",
      kThreads, kThreads, kThreads);
  c["optim"] = o.settings.optim;
  c["optim_choice"] = o.optim_reason;
  c["last_layer"] = o.settings.full_last_layer
                        ? "equal FLOPs: run_glue --full_last_layer computes every position of "
                          "the last encoder layer, as the other sides do"
                        : "ctrainer's default: the last encoder layer computes only the [CLS] "
                          "row the classifier reads (fewer FLOPs than the other sides; see "
                          "training_gflops_per_sample_ctrainer)";
  c["padding"] = o.settings.dynamic_padding ? "dynamic (pad_to_max_length false)"
                                            : "to max_seq_length (run_glue.py's default)";
  c["dataloading"] =
      "in-process on every side (HF dataloader_num_workers 0, run_glue "
      "--dataloader_num_workers 0, the plain loop's DataLoader num_workers 0), "
      "inside the timed train() region on every side";
  c["tokenization"] =
      "each process tokenizes its splits before training (run_glue with a fresh "
      "--cache_dir per run, so no cache hit), outside train()'s timing but "
      "inside start-to-first-step";
  c["evaluation"] = "after train(), outside train_samples_per_second on every side";
  c["samples_per_s"] =
      "train_samples_per_second: run_glue's train_results.json, HF train()'s "
      "metrics, the loop's own count with HF's formula (max_steps x batch, "
      "else dataset size x epochs) over its train time";
  c["start_to_first_step"] =
      "first_optimizer_step_unix_time (run_glue's profile.json; the Python sides' on_step_end / "
      "after the loop's first scheduler step) minus the bench's time.time() right before "
      "posix_spawn";
  c["profile_steps"] = features.profile_steps
                           ? json("run_glue --profile_steps 10 (profile.json)")
                           : json(
                                 "run_glue has no --profile_steps yet: ctrainer's "
                                 "start-to-first-step is missing");
  c["peak_rss"] = "ru_maxrss of the side's process from wait4, MiB (evaluation included)";
  c["flops"] = flops_formula();
  c["gemm"] = gemm_before.what + "; the larger of a measurement before and after the workloads";
  c["python"] = paths.python;
  c["run_glue"] = paths.run_glue;
  c["hardware_threads"] = std::thread::hardware_concurrency();
  c["load_average_1min"] = {{"before", load_before}, {"after", load_average()}};
  if (o.keep_runs) c["runs_kept_in"] = runs_root.string();
  return result;
}

}  // namespace

Scenario vs_hf_scenario() {
  return {"vs_hf",
          "run_glue vs transformers' Trainer vs a plain PyTorch loop (W1 small BERT, W2 MiniLM, "
          "W3 BERT-base FLOP/s), alternating processes, 2 threads each",
          run_vs_hf,
          {{"workloads", "LIST",
            "comma-separated: w1_b8,w1_b32,w2_mrpc,w2_sst2,w3,w3_b32 (default all but w3_b32, "
            "which only --device cuda adds; --quick: w1_b8,w2_mrpc)"},
           {"device", "cpu|cuda", "where every side trains (default cpu)"},
           {"bf16", "", "bf16 autocast on every side (the GPU recipe: --device cuda --bf16)"},
           {"padding", "max_length|dynamic", "run_glue.py's default max_length, or per batch"},
           {"optim", "auto|adamw_torch|adamw_torch_fused",
            "the optimizer of every side (auto: HF's default if run_glue has it)"},
           {"max_steps", "N",
            "stop every workload after N optimizer steps (functional checks, not measurements)"},
           {"seeds", "LIST",
            "comma-separated seeds, round r uses the r-th (default 42; at most --rounds)"},
           {"keep_runs", "", "keep each run's folder (logs, outputs) under the temp dir"},
           {"full_last_layer", "",
            "run_glue --full_last_layer: our side computes every position of the last layer, "
            "the same FLOPs as the other sides (the trainer alone is compared)"},
           {"no_profile", "",
            "run_glue without --profile_steps (no GPU synchronisation per phase; no start-to-first-"
            "step or phases for our side)"}}};
}

}  // namespace ctrainer::bench
