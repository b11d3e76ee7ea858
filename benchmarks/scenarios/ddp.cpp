// Scenario ddp: data-parallel training of a BERT-mini-sized BertForSequenceClassification on
// this machine's CPU with DDPStrategy over Gloo.
//  - scaling: step time and samples/s of 1 process (1 and all intra-op threads) against
//    2 processes with 1 thread each, at the same per-process batch;
//  - overlap: 2 processes with DDPOptions::overlap_with_backward on and off, with torch's
//    default 25 MiB buckets and with 4 MiB buckets; the exposed communication time of each,
//    and the share of the all-reduce time hidden behind backward, 1 - exposed(on) / exposed(off);
//  - bandwidth: gradient bytes / time of DDP's bucketed all-reduce (overlap off, so the time
//    is communication only) against a raw c10d all-reduce of one flat tensor of the same bytes
//    and of tensors split like the buckets.
// The parent re-executes this binary as the worker processes (CTRAINER_BENCH_DDP_WORKER set,
// plus torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...); each worker writes its
// measurements as JSON to a file the parent reads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/optim/adamw.h>

#include <ctrainer/distributed/ddp_strategy.h>
#include <ctrainer/distributed/process_group.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/distributed/strategy.h>
#include <ctrainer/models/bert/bert_for_sequence_classification.h>

#include "bench_models.h"
#include "bench_report.h"
#include "bench_workers.h"

namespace ctrainer::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr const char* kWorkerEnv = "CTRAINER_BENCH_DDP_WORKER";  // value: output file prefix
constexpr const char* kQuickEnv = "CTRAINER_BENCH_DDP_QUICK";
constexpr const char* kThreadsEnv = "CTRAINER_BENCH_DDP_THREADS";
constexpr const char* kOffFirstEnv = "CTRAINER_BENCH_DDP_OFF_FIRST";
constexpr uint64_t kInitSeed = 1234;
constexpr double kMB = 1e6;  // bandwidths and sizes in decimal MB (GB/s = 1e9 B/s)

struct Shape {
  std::string description;
  BertConfig config;
  int64_t seq, batch, warmup_steps, measured_steps;
  /// Repetitions of each raw all-reduce: they are short, and a noisy machine needs many.
  int64_t raw_warmup, raw_measured;
};

/// A 2-process configuration of DDPStrategy.
struct DdpMode {
  std::string name;
  bool overlap;
  double bucket_cap_mb;
};

/// torch's default buckets (25 MiB) put all of BERT-mini's encoder into one bucket that is
/// complete only when backward reaches the embeddings, so 4 MiB buckets (about one encoder
/// layer each) are measured too: with them the encoder's all-reduces can start during backward.
const std::vector<DdpMode>& ddp_modes() {
  static const std::vector<DdpMode> modes = {{"overlap_on", true, 25},
                                             {"overlap_off", false, 25},
                                             {"overlap_on_4mb_buckets", true, 4},
                                             {"overlap_off_4mb_buckets", false, 4}};
  return modes;
}

/// BERT-mini (google/bert_uncased_L-4_H-256_A-4) as in the precision scenario; per-process
/// batch 16 at sequence length 128 makes a 1-thread step take about 0.7 s on this machine.
Shape shape(bool quick) {
  Shape s;
  s.config = bert_mini_config(quick);
  s.seq = quick ? 32 : 128;
  s.batch = quick ? 4 : 16;
  s.warmup_steps = quick ? 1 : 2;
  s.measured_steps = quick ? 2 : 8;
  s.raw_warmup = quick ? 1 : 3;
  s.raw_measured = quick ? 2 : 20;
  s.description = fmt::format(
      "BertForSequenceClassification (BERT-mini shape): vocab {}, hidden {}, {} layers, {} "
      "heads, ffn {}, dropout {}; seq {}, batch {} per process",
      s.config.vocab_size, s.config.hidden_size, s.config.num_hidden_layers,
      s.config.num_attention_heads, s.config.intermediate_size, s.config.hidden_dropout_prob, s.seq,
      s.batch);
  return s;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

// ---------------------------------------------------------------------------------------------
// Worker

/// What train() measured, one entry per measured step (the DDP statistics are
/// DDPStrategy::last_stats(); empty for one process).
struct StepTimes {
  std::vector<double> step, exposed;
  std::vector<std::vector<double>> bucket_seconds;
  std::vector<std::size_t> bucket_bytes;
  std::size_t launched_in_backward = 0;
};

/// Warm-up and measured steps of zero_grad + forward + backward (DDP's all-reduce included) +
/// optimizer step on the same batch.
StepTimes train(Model& model, Strategy& strategy, torch::optim::Optimizer& optimizer,
                const Batch& batch, const Shape& s) {
  StepTimes times;
  auto* ddp = dynamic_cast<DDPStrategy*>(&strategy);
  for (int64_t step = 0; step < s.warmup_steps + s.measured_steps; ++step) {
    const auto start = Clock::now();
    strategy.zero_grad(model);
    strategy.backward(model.forward(batch).loss, /*sync=*/true);
    strategy.optimizer_step(optimizer);
    const double seconds = seconds_since(start);
    if (step < s.warmup_steps) continue;
    times.step.push_back(seconds);
    if (ddp != nullptr) {
      const ReducerStats& stats = ddp->last_stats();
      times.exposed.push_back(stats.exposed_seconds);
      times.bucket_seconds.push_back(stats.bucket_seconds);
      times.bucket_bytes = stats.bucket_bytes;
      times.launched_in_backward = stats.buckets_launched_in_backward;
    }
  }
  return times;
}

/// Seconds of `collective` per repetition, each started right after a barrier so that it
/// measures communication, not one rank waiting for the other to arrive.
std::vector<double> time_collective(ProcessGroup& group, const Shape& s,
                                    const std::function<void()>& collective) {
  std::vector<double> seconds;
  for (int64_t rep = 0; rep < s.raw_warmup + s.raw_measured; ++rep) {
    group.barrier();
    const auto start = Clock::now();
    collective();
    if (rep >= s.raw_warmup) seconds.push_back(seconds_since(start));
  }
  return seconds;
}

/// Raw c10d all-reduces of the same bytes as DDP's buckets: one flat tensor, and one tensor
/// per bucket launched back to back and then waited for (what DDP does without overlap),
/// without and with averaging each bucket after its wait.
json time_raw_all_reduce(ProcessGroup& group, const std::vector<std::size_t>& bucket_bytes,
                         const Shape& s) {
  std::vector<at::Tensor> buckets;
  int64_t total = 0;
  for (std::size_t bytes : bucket_bytes) {
    buckets.push_back(at::ones({static_cast<int64_t>(bytes / sizeof(float))}));
    total += buckets.back().numel();
  }
  at::Tensor flat = at::ones({total});
  json out;
  out["flat_seconds"] = time_collective(group, s, [&] { group.all_reduce(flat); });
  out["split_seconds"] = time_collective(group, s, [&] {
    std::vector<PendingCollective> pending;
    for (auto& bucket : buckets) pending.push_back(group.all_reduce_async(bucket));
    for (auto& work : pending) work.wait();
  });
  // The same, but each bucket averaged as soon as it arrived, as GradientReducer::finalize
  // does: that local work competes with the transfers still in flight for the CPU.
  const double world = static_cast<double>(group.world_size());
  out["split_average_seconds"] = time_collective(group, s, [&] {
    std::vector<PendingCollective> pending;
    for (auto& bucket : buckets) pending.push_back(group.all_reduce_async(bucket));
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      pending[b].wait();
      buckets[b].div_(world);
    }
  });
  return out;
}

json to_json(const StepTimes& t) {
  return {{"step_seconds", t.step},
          {"exposed_seconds", t.exposed},
          {"bucket_seconds", t.bucket_seconds},
          {"bucket_bytes", t.bucket_bytes},
          {"buckets_launched_in_backward", t.launched_in_backward}};
}

void measure_in_worker(const std::string& out_prefix) {
  const Shape s = shape(std::getenv(kQuickEnv) != nullptr);
  at::set_num_threads(std::stoi(env_or(kThreadsEnv, "1")));
  const ProcessInfo info = ProcessInfo::from_environment();
  json out = {{"rank", info.rank}, {"threads", at::get_num_threads()}};

  // Each rank its own data (a shard of the global batch), the same batch every step: data
  // loading is not what this scenario measures.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(kInitSeed + info.rank);
  const Batch batch{
      {"input_ids", at::randint(0, s.config.vocab_size, {s.batch, s.seq}, gen, at::kLong)},
      {"labels", at::randint(0, 2, {s.batch}, gen, at::kLong)}};
  torch::manual_seed(kInitSeed);
  auto model_ptr = std::make_shared<BertForSequenceClassification>(s.config);
  Model& model = *model_ptr;
  const c10::Device cpu(c10::kCPU);

  if (info.world_size == 1) {
    SingleDeviceStrategy strategy;
    strategy.setup(model, cpu);
    torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(1e-4));
    out["train"] = to_json(train(model, strategy, optimizer, batch, s));
  } else {
    ProcessGroupOptions options;
    options.timeout = std::chrono::seconds(300);
    ProcessGroup group(info, options);
    std::unique_ptr<torch::optim::AdamW> optimizer;
    std::vector<std::size_t> default_bucket_bytes;
    // Within each bucket size, on and off take turns going first from one run to the next.
    const bool off_first = std::getenv(kOffFirstEnv) != nullptr;
    const auto& modes = ddp_modes();
    for (std::size_t pair = 0; pair < modes.size(); pair += 2) {
      for (const std::size_t k : {pair + (off_first ? 1 : 0), pair + (off_first ? 0 : 1)}) {
        DDPOptions ddp;
        ddp.overlap_with_backward = modes[k].overlap;
        ddp.bucket_cap_mb = modes[k].bucket_cap_mb;
        // A fresh strategy per mode: its reducer re-buckets the gradients and the previous
        // reducer's hooks go quiet with it (they only hold a weak_ptr).
        DDPStrategy strategy(group, ddp);
        strategy.setup(model, cpu);
        if (!optimizer)
          optimizer = std::make_unique<torch::optim::AdamW>(model.parameters(),
                                                            torch::optim::AdamWOptions(1e-4));
        const StepTimes times = train(model, strategy, *optimizer, batch, s);
        out[modes[k].name] = to_json(times);
        if (modes[k].name == "overlap_off") default_bucket_bytes = times.bucket_bytes;
      }
    }
    out["raw"] = time_raw_all_reduce(group, default_bucket_bytes, s);
    group.shutdown();
  }
  std::ofstream(out_prefix + "." + std::to_string(info.rank) + ".json") << out.dump() << '\n';
}

/// The worker process: measures, writes its report and exits (0, or 3 after printing the
/// error; the parent then names the failed rank).
[[noreturn]] void run_worker(const std::string& out_prefix) {
  try {
    measure_in_worker(out_prefix);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ctrainer-bench ddp worker (RANK=%s): %s\n", env_or("RANK", "0").c_str(),
                 error.what());
    std::exit(3);
  }
  std::exit(0);
}

// ---------------------------------------------------------------------------------------------
// Parent

/// Launches `world` workers with `threads` intra-op threads each, as torchrun would on one
/// node, and returns their reports by rank.
std::vector<json> run_workers(int world, int threads, bool quick, bool off_first) {
  WorkerLaunch launch{"ddp", kWorkerEnv, world, {}};
  launch.env.push_back(fmt::format("{}={}", kThreadsEnv, threads));
  launch.env.push_back(fmt::format("OMP_NUM_THREADS={}", threads));
  if (quick) launch.env.push_back(fmt::format("{}=1", kQuickEnv));
  if (off_first) launch.env.push_back(fmt::format("{}=1", kOffFirstEnv));
  return ctrainer::bench::run_workers(launch);
}

std::vector<double> as_vector(const json& values) {
  return values.get<std::vector<double>>();
}

/// Per step, the smaller of the ranks' values. A rank's wait for a collective also contains the
/// time until the slower rank arrives; the rank that arrives last waits only for the transfer.
std::vector<double> min_over_ranks(const std::vector<json>& reports, const std::string& mode,
                                   const std::string& key) {
  std::vector<double> result = as_vector(reports[0][mode][key]);
  for (std::size_t r = 1; r < reports.size(); ++r) {
    const auto other = as_vector(reports[r][mode][key]);
    for (std::size_t i = 0; i < result.size(); ++i) result[i] = std::min(result[i], other[i]);
  }
  return result;
}

BenchResult run_ddp(const BenchOptions& options) {
  if (const char* prefix = std::getenv(kWorkerEnv)) run_worker(prefix);
  const Shape s = shape(options.quick);
  const double load_before = load_average();
  const int64_t rounds = options.quick ? 1 : options.rounds;

  // Per configuration, one median per round (over that run's measured steps).
  std::map<std::string, std::vector<double>> step_s, exposed_s;
  std::vector<double> raw_flat_s, raw_split_s, raw_split_average_s;
  std::map<std::string, std::vector<std::size_t>> bucket_bytes;  // per 2-process mode
  std::map<std::string, std::size_t> launched_in_backward;
  std::vector<std::vector<double>> off_bucket_s;  // per round, per default bucket (rank 0)
  for (int64_t round = 0; round < rounds; ++round) {
    // Rotate the order so that slow drifts of the machine hit every configuration alike.
    for (int k = 0; k < 3; ++k) {
      const int configuration = static_cast<int>((k + round) % 3);
      if (configuration < 2) {
        const int threads = configuration + 1;
        const auto reports = run_workers(1, threads, options.quick, false);
        step_s[threads == 1 ? "1proc_1thread" : "1proc_2threads"].push_back(
            median(as_vector(reports[0]["train"]["step_seconds"])));
        continue;
      }
      const auto reports = run_workers(2, 1, options.quick, round % 2 == 1);
      for (const auto& mode : ddp_modes()) {
        const json& report = reports[0][mode.name];
        step_s[mode.name].push_back(median(as_vector(report["step_seconds"])));
        exposed_s[mode.name].push_back(
            median(min_over_ranks(reports, mode.name, "exposed_seconds")));
        bucket_bytes[mode.name] = report["bucket_bytes"].get<std::vector<std::size_t>>();
        launched_in_backward[mode.name] = report["buckets_launched_in_backward"];
      }
      raw_flat_s.push_back(median(min_over_ranks(reports, "raw", "flat_seconds")));
      raw_split_s.push_back(median(min_over_ranks(reports, "raw", "split_seconds")));
      raw_split_average_s.push_back(
          median(min_over_ranks(reports, "raw", "split_average_seconds")));
      const auto per_step =
          reports[0]["overlap_off"]["bucket_seconds"].get<std::vector<std::vector<double>>>();
      std::vector<double> per_bucket;
      for (std::size_t b = 0; b < per_step.front().size(); ++b) {
        std::vector<double> samples;
        for (const auto& step : per_step) samples.push_back(step[b]);
        per_bucket.push_back(median(samples));
      }
      off_bucket_s.push_back(per_bucket);
    }
  }

  const auto megabytes = [](const std::vector<std::size_t>& bytes) {
    std::vector<double> mb;
    for (std::size_t b : bytes) mb.push_back(static_cast<double>(b) / kMB);
    return mb;
  };
  const auto milliseconds = [](const std::vector<double>& seconds) {
    std::vector<double> ms;
    for (double s : seconds) ms.push_back(1000 * s);
    return ms;
  };
  std::size_t total_bytes = 0;
  for (std::size_t b : bucket_bytes["overlap_off"]) total_bytes += b;
  BenchResult result;
  result.scenario = "ddp";
  result.config["model"] = s.description;
  result.config["parameters"] = [&] {
    torch::manual_seed(kInitSeed);
    return BertForSequenceClassification(s.config).num_parameters();
  }();
  result.config["gradient_mb"] = static_cast<double>(total_bytes) / kMB;
  result.config["ddp"] =
      "DDPStrategy over Gloo (2 threads per process) on 127.0.0.1; first bucket 1 MiB, "
      "bucket_cap_mb 25 (torch's default) unless the mode says 4mb_buckets";
  result.config["optimizer"] = "torch::optim::AdamW lr 1e-4, no clipping";
  result.config["device"] = "cpu";
  result.config["hardware_threads"] = std::thread::hardware_concurrency();
  result.config["rounds"] = rounds;
  result.config["load_average_1min"] = {{"before", load_before}, {"after", load_average()}};
  result.config["steps_per_run"] =
      fmt::format("{} warm-up + {} measured (median per run; table = median over runs)",
                  s.warmup_steps, s.measured_steps);
  result.config["raw_repetitions_per_run"] =
      fmt::format("{} warm-up + {} measured, each after a barrier", s.raw_warmup, s.raw_measured);
  result.config["exposed_comm"] =
      "wall time DDPStrategy::backward spends in finalize() launching and waiting for "
      "all-reduces (ReducerStats::exposed_seconds), per step the smaller of the two ranks "
      "(the later rank to arrive waits for the transfer only)";
  result.config["hidden_comm_share"] = "1 - exposed_comm(overlap on) / exposed_comm(overlap off)";

  auto& m = result.metrics;
  const double global_1 = static_cast<double>(s.batch), global_2 = 2.0 * s.batch;
  for (const auto& [name, samples] : step_s) {
    const double step = median(samples);
    m[name]["step_ms"] = 1000 * step;
    m[name]["step_ms_min"] = 1000 * *std::min_element(samples.begin(), samples.end());
    m[name]["step_ms_max"] = 1000 * *std::max_element(samples.begin(), samples.end());
    m[name]["step_ms_per_round"] = milliseconds(samples);
    m[name]["samples_per_s"] = (name.rfind("1proc", 0) == 0 ? global_1 : global_2) / step;
  }
  for (const auto& mode : ddp_modes()) {
    auto& row = m[mode.name];
    row["exposed_comm_ms"] = 1000 * median(exposed_s[mode.name]);
    row["exposed_comm_ms_per_round"] = milliseconds(exposed_s[mode.name]);
    row["buckets_mb"] = megabytes(bucket_bytes[mode.name]);
    row["buckets_launched_in_backward"] = launched_in_backward[mode.name];
  }
  const double sps_2 = m["overlap_on"]["samples_per_s"];
  m["scaling_efficiency_vs_1proc_1thread"] =
      sps_2 / (2 * m["1proc_1thread"]["samples_per_s"].get<double>());
  m["speedup_vs_1proc_2threads"] = sps_2 / m["1proc_2threads"]["samples_per_s"].get<double>();
  const auto hidden = [&](const std::string& on, const std::string& off) {
    return 1 - median(exposed_s[on]) / median(exposed_s[off]);
  };
  m["hidden_comm_share"] = hidden("overlap_on", "overlap_off");
  m["hidden_comm_share_4mb_buckets"] = hidden("overlap_on_4mb_buckets", "overlap_off_4mb_buckets");

  // DDP's all-reduce of the default buckets without overlap is communication only, so its
  // exposed time is the time of DDP's bucketed all-reduce.
  const double ddp_s = median(exposed_s["overlap_off"]);
  const double bytes = static_cast<double>(total_bytes);
  auto& bw = m["bandwidth"];
  bw["ddp_buckets_ms"] = 1000 * ddp_s;
  bw["raw_flat_ms"] = 1000 * median(raw_flat_s);
  bw["raw_same_split_ms"] = 1000 * median(raw_split_s);
  bw["raw_same_split_average_ms"] = 1000 * median(raw_split_average_s);
  bw["ddp_buckets_gb_s"] = bytes / ddp_s / 1e9;
  bw["raw_flat_gb_s"] = bytes / median(raw_flat_s) / 1e9;
  bw["raw_same_split_gb_s"] = bytes / median(raw_split_s) / 1e9;
  bw["raw_same_split_average_gb_s"] = bytes / median(raw_split_average_s) / 1e9;
  bw["ddp_vs_raw_flat"] = median(raw_flat_s) / ddp_s;
  bw["ddp_vs_raw_same_split"] = median(raw_split_s) / ddp_s;
  bw["ddp_vs_raw_same_split_average"] = median(raw_split_average_s) / ddp_s;
  bw["raw_flat_ms_per_round"] = milliseconds(raw_flat_s);
  bw["overlap_off_bucket_launch_to_wait_ms"] = [&] {
    std::vector<double> ms;
    for (std::size_t b = 0; b < off_bucket_s.front().size(); ++b) {
      std::vector<double> samples;
      for (const auto& round : off_bucket_s) samples.push_back(round[b]);
      ms.push_back(1000 * median(samples));
    }
    return ms;
  }();

  result.header = {"configuration",    "buckets",   "step ms",
                   "step ms min..max", "samples/s", "exposed comm ms"};
  for (const std::string name : {"1proc_1thread", "1proc_2threads"})
    result.rows.push_back({{name, "-", fmt::format("{:.1f}", m[name]["step_ms"].get<double>()),
                            fmt::format("{:.1f}..{:.1f}", m[name]["step_ms_min"].get<double>(),
                                        m[name]["step_ms_max"].get<double>()),
                            fmt::format("{:.1f}", m[name]["samples_per_s"].get<double>()), "-"}});
  for (const auto& mode : ddp_modes()) {
    const auto& row = m[mode.name];
    result.rows.push_back({{"2proc_1thread_" + mode.name, std::to_string(row["buckets_mb"].size()),
                            fmt::format("{:.1f}", row["step_ms"].get<double>()),
                            fmt::format("{:.1f}..{:.1f}", row["step_ms_min"].get<double>(),
                                        row["step_ms_max"].get<double>()),
                            fmt::format("{:.1f}", row["samples_per_s"].get<double>()),
                            fmt::format("{:.1f}", row["exposed_comm_ms"].get<double>())}});
  }
  const std::string default_buckets = std::to_string(bucket_bytes["overlap_off"].size());
  result.rows.push_back({{"raw c10d all-reduce, flat", "1", "-", "-", "-",
                          fmt::format("{:.1f}", 1000 * median(raw_flat_s))}});
  result.rows.push_back({{"raw c10d all-reduce, bucket split", default_buckets, "-", "-", "-",
                          fmt::format("{:.1f}", 1000 * median(raw_split_s))}});
  result.rows.push_back({{"raw c10d all-reduce, bucket split + averaging", default_buckets, "-",
                          "-", "-", fmt::format("{:.1f}", 1000 * median(raw_split_average_s))}});
  return result;
}

}  // namespace

Scenario ddp_scenario() {
  return {"ddp",
          "DDP on CPU (Gloo): 1 vs 2 processes, overlap of all-reduce with backward, bucket "
          "all-reduce bandwidth vs raw c10d",
          run_ddp};
}

}  // namespace ctrainer::bench
