// Scenario ddp: data-parallel training of a BERT-mini-sized BertForSequenceClassification on
// this machine's CPU with DDPStrategy over Gloo.
//  - scaling: step time and samples/s of 1 process (1 and all intra-op threads) against
//    2 processes with 1 thread each, at the same per-process batch;
//  - overlap: 2 processes with DDPOptions::overlap_with_backward on and off; the exposed
//    communication time of each, and the share of the all-reduce time hidden behind backward,
//    1 - exposed(on) / exposed(off);
//  - bandwidth: gradient bytes / time of DDP's bucketed all-reduce (overlap off, so the time
//    is communication only) against a raw c10d all-reduce of one flat tensor of the same bytes
//    and of tensors split like the buckets.
// The parent re-executes this binary as the worker processes (CTRAINER_BENCH_DDP_WORKER set,
// plus torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...); each worker writes its
// measurements as JSON to a file the parent reads.
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
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

#include "bench_report.h"

extern char** environ;

namespace ctrainer::bench {
namespace {

namespace fs = std::filesystem;
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
};

/// BERT-mini (google/bert_uncased_L-4_H-256_A-4) as in the precision scenario; per-process
/// batch 16 at sequence length 128 makes a 1-thread step take about 0.7 s on this machine.
Shape shape(bool quick) {
  Shape s;
  s.config.vocab_size = 30522;
  s.config.hidden_size = quick ? 64 : 256;
  s.config.num_hidden_layers = quick ? 1 : 4;
  s.config.num_attention_heads = 4;
  s.config.intermediate_size = quick ? 128 : 1024;
  s.config.set_num_labels(2);
  s.seq = quick ? 32 : 128;
  s.batch = quick ? 4 : 16;
  s.warmup_steps = quick ? 1 : 2;
  s.measured_steps = quick ? 2 : 8;
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

/// One training step: forward, backward (with DDP's all-reduce), optimizer step.
struct StepTimes {
  std::vector<double> step, exposed;
  std::vector<std::vector<double>> bucket_seconds;
  std::vector<std::size_t> bucket_bytes;
  std::size_t launched_in_backward = 0;
};

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
  for (int64_t rep = 0; rep < s.warmup_steps + s.measured_steps; ++rep) {
    group.barrier();
    const auto start = Clock::now();
    collective();
    if (rep >= s.warmup_steps) seconds.push_back(seconds_since(start));
  }
  return seconds;
}

/// Raw c10d all-reduces of the same bytes as DDP's buckets: one flat tensor, and one tensor
/// per bucket launched back to back and then waited for (what DDP does without overlap).
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
  out["flat_seconds"] = time_collective(group, s, [&] { group.all_reduce_sum(flat); });
  out["split_seconds"] = time_collective(group, s, [&] {
    std::vector<PendingCollective> pending;
    for (auto& bucket : buckets) pending.push_back(group.all_reduce_sum_async(bucket));
    for (auto& work : pending) work.wait();
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

[[noreturn]] void run_worker(const std::string& out_prefix) {
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
    std::vector<std::size_t> bucket_bytes;
    const bool off_first = std::getenv(kOffFirstEnv) != nullptr;
    for (const bool overlap : {!off_first, off_first}) {
      DDPOptions ddp;
      ddp.overlap_with_backward = overlap;
      // A fresh strategy per mode: its reducer re-buckets the gradients and the previous
      // reducer's hooks go quiet with it (they only hold a weak_ptr).
      DDPStrategy strategy(group, ddp);
      strategy.setup(model, cpu);
      if (!optimizer)
        optimizer = std::make_unique<torch::optim::AdamW>(model.parameters(),
                                                          torch::optim::AdamWOptions(1e-4));
      const StepTimes times = train(model, strategy, *optimizer, batch, s);
      out[overlap ? "overlap_on" : "overlap_off"] = to_json(times);
      bucket_bytes = times.bucket_bytes;
    }
    out["raw"] = time_raw_all_reduce(group, bucket_bytes, s);
    group.shutdown();
  }
  std::ofstream(out_prefix + "." + std::to_string(info.rank) + ".json") << out.dump() << '\n';
  std::exit(0);
}

// ---------------------------------------------------------------------------------------------
// Parent

/// A TCP port on 127.0.0.1 that was free a moment ago, for the workers' rendezvous.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool ok = fd >= 0 &&
                  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) throw std::runtime_error("ddp: cannot find a free TCP port on 127.0.0.1");
  return ntohs(address.sin_port);
}

/// Launches `world` workers with `threads` intra-op threads each, as torchrun would on one
/// node, waits for all of them and returns their reports by rank. When one fails the others
/// are stopped (they would wait for it until the collective timeout).
std::vector<json> run_workers(int world, int threads, bool quick, bool off_first) {
  const std::string prefix =
      (fs::temp_directory_path() / fmt::format("ctrainer_bench_ddp_{}", getpid())).string();
  const int port = free_port();
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string scenario = "ddp";
  std::vector<char*> argv = {self.data(), scenario.data(), nullptr};
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      // Our own variables win over inherited ones of the same name.
      const std::string name = entry.substr(0, entry.find('='));
      if (name != "OMP_NUM_THREADS" && name != "RANK" && name != "WORLD_SIZE" &&
          name != "LOCAL_RANK" && name != "LOCAL_WORLD_SIZE" && name != "MASTER_ADDR" &&
          name != "MASTER_PORT")
        env.push_back(entry);
    }
    env.push_back(fmt::format("{}={}", kWorkerEnv, prefix));
    env.push_back(fmt::format("{}={}", kThreadsEnv, threads));
    env.push_back(fmt::format("OMP_NUM_THREADS={}", threads));
    if (quick) env.push_back(fmt::format("{}=1", kQuickEnv));
    if (off_first) env.push_back(fmt::format("{}=1", kOffFirstEnv));
    if (world > 1) {
      env.push_back(fmt::format("RANK={}", rank));
      env.push_back(fmt::format("LOCAL_RANK={}", rank));
      env.push_back(fmt::format("WORLD_SIZE={}", world));
      env.push_back(fmt::format("LOCAL_WORLD_SIZE={}", world));
      env.push_back("MASTER_ADDR=127.0.0.1");
      env.push_back(fmt::format("MASTER_PORT={}", port));
    }
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) {
      for (pid_t started : pids) ::kill(started, SIGTERM);
      throw std::runtime_error("ddp: cannot start a worker process of " + self);
    }
    pids.push_back(pid);
  }

  std::string failure;
  std::vector<bool> running(pids.size(), true);
  for (std::size_t left = pids.size(); left > 0;) {
    for (std::size_t r = 0; r < pids.size(); ++r) {
      int status = 0;
      if (!running[r] || ::waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      running[r] = false;
      --left;
      if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && failure.empty()) {
        failure = fmt::format(
            "ddp: worker rank {} of {} failed (wait status {}); its error is "
            "on stderr above",
            r, world, status);
        for (std::size_t other = 0; other < pids.size(); ++other)
          if (running[other]) ::kill(pids[other], SIGTERM);
      }
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<json> reports;
  for (int rank = 0; rank < world; ++rank) {
    const std::string path = fmt::format("{}.{}.json", prefix, rank);
    if (failure.empty()) {
      std::ifstream in(path);
      if (!in)
        failure = "ddp: worker rank " + std::to_string(rank) + " wrote no " + path;
      else
        reports.push_back(json::parse(in));
    }
    fs::remove(path);
  }
  if (!failure.empty()) throw std::runtime_error(failure);
  return reports;
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
  const int64_t rounds = options.quick ? 1 : options.rounds;

  // Per configuration, one median per round (over that run's measured steps).
  std::map<std::string, std::vector<double>> step_s, exposed_s;
  std::vector<double> raw_flat_s, raw_split_s;
  std::vector<std::size_t> bucket_bytes;
  std::vector<std::vector<double>> off_bucket_s;  // per round, per bucket (rank 0)
  std::size_t launched_on = 0, launched_off = 0;
  for (int64_t round = 0; round < rounds; ++round) {
    // Rotate the order so that slow drifts of the machine hit every configuration alike.
    for (int k = 0; k < 3; ++k) {
      switch ((k + round) % 3) {
        case 0:
          step_s["1proc_1thread"].push_back(median(
              as_vector(run_workers(1, 1, options.quick, false)[0]["train"]["step_seconds"])));
          break;
        case 1:
          step_s["1proc_2threads"].push_back(median(
              as_vector(run_workers(1, 2, options.quick, false)[0]["train"]["step_seconds"])));
          break;
        default: {
          const auto reports = run_workers(2, 1, options.quick, round % 2 == 1);
          for (const std::string mode : {"overlap_on", "overlap_off"}) {
            step_s[mode].push_back(median(as_vector(reports[0][mode]["step_seconds"])));
            exposed_s[mode].push_back(median(min_over_ranks(reports, mode, "exposed_seconds")));
          }
          raw_flat_s.push_back(median(min_over_ranks(reports, "raw", "flat_seconds")));
          raw_split_s.push_back(median(min_over_ranks(reports, "raw", "split_seconds")));
          bucket_bytes = reports[0]["overlap_off"]["bucket_bytes"].get<std::vector<std::size_t>>();
          launched_on = reports[0]["overlap_on"]["buckets_launched_in_backward"];
          launched_off = reports[0]["overlap_off"]["buckets_launched_in_backward"];
          const auto per_step =
              reports[0]["overlap_off"]["bucket_seconds"].get<std::vector<std::vector<double>>>();
          std::vector<double> per_bucket;
          for (std::size_t b = 0; b < bucket_bytes.size(); ++b) {
            std::vector<double> samples;
            for (const auto& step : per_step) samples.push_back(step[b]);
            per_bucket.push_back(median(samples));
          }
          off_bucket_s.push_back(per_bucket);
        }
      }
    }
  }

  std::size_t total_bytes = 0;
  for (std::size_t b : bucket_bytes) total_bytes += b;
  BenchResult result;
  result.scenario = "ddp";
  result.config["model"] = s.description;
  result.config["parameters"] = [&] {
    torch::manual_seed(kInitSeed);
    return BertForSequenceClassification(s.config).num_parameters();
  }();
  result.config["gradient_mb"] = static_cast<double>(total_bytes) / kMB;
  result.config["buckets_mb"] = [&] {
    std::vector<double> mb;
    for (std::size_t b : bucket_bytes) mb.push_back(static_cast<double>(b) / kMB);
    return mb;
  }();
  result.config["ddp"] = "DDPStrategy over Gloo on 127.0.0.1, bucket_cap_mb 25, first bucket 1 MiB";
  result.config["optimizer"] = "torch::optim::AdamW lr 1e-4, no clipping";
  result.config["device"] = "cpu";
  result.config["hardware_threads"] = std::thread::hardware_concurrency();
  result.config["rounds"] = rounds;
  result.config["steps_per_run"] =
      fmt::format("{} warm-up + {} measured (median per run; table = median over runs)",
                  s.warmup_steps, s.measured_steps);
  result.config["exposed_comm"] =
      "wall time DDPStrategy::backward spends in finalize() launching and waiting for "
      "all-reduces (ReducerStats::exposed_seconds), per step the smaller of the two ranks "
      "(the later rank to arrive waits for the transfer only)";

  auto& m = result.metrics;
  const double global_1 = static_cast<double>(s.batch), global_2 = 2.0 * s.batch;
  for (const auto& [name, samples] : step_s) {
    const double step = median(samples);
    m[name]["step_ms"] = 1000 * step;
    m[name]["step_ms_min"] = 1000 * *std::min_element(samples.begin(), samples.end());
    m[name]["step_ms_max"] = 1000 * *std::max_element(samples.begin(), samples.end());
    m[name]["samples_per_s"] = (name.rfind("1proc", 0) == 0 ? global_1 : global_2) / step;
  }
  for (const auto& [name, samples] : exposed_s) m[name]["exposed_comm_ms"] = 1000 * median(samples);
  m["overlap_on"]["buckets_launched_in_backward"] = launched_on;
  m["overlap_off"]["buckets_launched_in_backward"] = launched_off;
  const double sps_2 = m["overlap_on"]["samples_per_s"];
  m["scaling_efficiency_vs_1proc_1thread"] =
      sps_2 / (2 * m["1proc_1thread"]["samples_per_s"].get<double>());
  m["speedup_vs_1proc_2threads"] = sps_2 / m["1proc_2threads"]["samples_per_s"].get<double>();
  const double exposed_on = median(exposed_s["overlap_on"]);
  const double exposed_off = median(exposed_s["overlap_off"]);
  m["hidden_comm_share"] = 1 - exposed_on / exposed_off;
  const double bytes = static_cast<double>(total_bytes);
  m["bandwidth"]["ddp_buckets_gb_s"] = bytes / exposed_off / 1e9;
  m["bandwidth"]["raw_flat_gb_s"] = bytes / median(raw_flat_s) / 1e9;
  m["bandwidth"]["raw_same_split_gb_s"] = bytes / median(raw_split_s) / 1e9;
  m["bandwidth"]["raw_flat_ms"] = 1000 * median(raw_flat_s);
  m["bandwidth"]["raw_same_split_ms"] = 1000 * median(raw_split_s);
  m["bandwidth"]["ddp_buckets_ms"] = 1000 * exposed_off;
  m["bandwidth"]["ddp_vs_raw_flat"] = median(raw_flat_s) / exposed_off;
  m["bandwidth"]["ddp_vs_raw_same_split"] = median(raw_split_s) / exposed_off;
  m["bandwidth"]["overlap_off_bucket_ms"] = [&] {
    std::vector<double> ms;
    for (std::size_t b = 0; b < bucket_bytes.size(); ++b) {
      std::vector<double> samples;
      for (const auto& round : off_bucket_s) samples.push_back(round[b]);
      ms.push_back(1000 * median(samples));
    }
    return ms;
  }();

  result.header = {"configuration", "step ms", "step ms min..max", "samples/s", "exposed comm ms"};
  for (const std::string name : {"1proc_1thread", "1proc_2threads", "overlap_on", "overlap_off"}) {
    const auto& row = m[name];
    result.rows.push_back({{name.rfind("overlap", 0) == 0 ? "2proc_1thread_" + name : name,
                            fmt::format("{:.1f}", row["step_ms"].get<double>()),
                            fmt::format("{:.1f}..{:.1f}", row["step_ms_min"].get<double>(),
                                        row["step_ms_max"].get<double>()),
                            fmt::format("{:.1f}", row["samples_per_s"].get<double>()),
                            row.contains("exposed_comm_ms")
                                ? fmt::format("{:.1f}", row["exposed_comm_ms"].get<double>())
                                : std::string("-")}});
  }
  result.rows.push_back({{"raw c10d all-reduce, flat", "-", "-", "-",
                          fmt::format("{:.1f}", 1000 * median(raw_flat_s))}});
  result.rows.push_back({{"raw c10d all-reduce, bucket split", "-", "-", "-",
                          fmt::format("{:.1f}", 1000 * median(raw_split_s))}});
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
