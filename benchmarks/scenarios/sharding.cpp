// Scenario sharding: memory and step time of data parallelism (DDPStrategy, "stage 0") against
// ShardedStrategy ZeRO-1/2/3, each without and with optimizer offload, on a BERT classifier
// trained by 2 processes on this machine's CPU over Gloo. Per configuration and rank:
//  - the bytes of parameters / gradients / fp32 master / optimizer state the rank holds after a
//    step (ShardedStrategy::memory; for DDP the same walk over the model and the optimizer),
//    next to the ZeRO paper's formulas for fp32 + AdamW (Psi parameters, N ranks);
//  - peak RSS: of the whole process (ru_maxrss: model construction included) and of the
//    training steps alone (VmHWM after resetting it through /proc/self/clear_refs);
//  - step time (before_forward + forward + backward + clip + optimizer step + zero_grad) and its
//    phases.
// Every configuration runs in its own pair of processes (a process's peak RSS only grows), and
// the configurations take turns in rotating order round after round, so that slow drifts of a
// shared machine hit all of them alike.
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/optim/adamw.h>

#include <ctrainer/distributed/ddp_strategy.h>
#include <ctrainer/distributed/process_group.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/distributed/sharded_strategy.h>
#include <ctrainer/models/bert/bert_for_sequence_classification.h>

#include "bench_report.h"
#include "bench_workers.h"

namespace ctrainer::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr const char* kWorkerEnv = "CTRAINER_BENCH_SHARDING_WORKER";  // value: report prefix
constexpr const char* kConfigEnv = "CTRAINER_BENCH_SHARDING_CONFIG";
constexpr const char* kQuickEnv = "CTRAINER_BENCH_SHARDING_QUICK";
constexpr int kWorld = 2;
constexpr uint64_t kInitSeed = 1234;
constexpr double kMaxNorm = 1.0;
constexpr double kMB = 1e6;  // decimal MB, as the other results

struct Shape {
  std::string description;
  BertConfig config;
  int64_t seq, batch, warmup_steps, measured_steps;
};

/// BERT-base's shape (bert-base-uncased: 110M parameters), the model the ZeRO formulas are
/// usually quoted for, with a 2-label head. A 2-layer, hidden-64 model with a 1000-token
/// vocabulary with `quick` (a smoke test of the harness, not a measurement; 2 layers so that
/// ZeRO-3 has more than one unit).
Shape shape(bool quick) {
  Shape s;
  s.config.vocab_size = quick ? 1000 : 30522;
  s.config.hidden_size = quick ? 64 : 768;
  s.config.num_hidden_layers = quick ? 2 : 12;
  s.config.num_attention_heads = quick ? 4 : 12;
  s.config.intermediate_size = quick ? 128 : 3072;
  s.config.max_position_embeddings = quick ? 64 : 512;
  s.config.set_num_labels(2);
  s.seq = quick ? 16 : 64;
  s.batch = quick ? 2 : 4;
  s.warmup_steps = 1;
  s.measured_steps = quick ? 1 : 3;
  s.description = fmt::format(
      "BertForSequenceClassification: vocab {}, hidden {}, {} layers, {} heads, ffn {}, max "
      "positions {}, dropout {}; seq {}, batch {} per process",
      s.config.vocab_size, s.config.hidden_size, s.config.num_hidden_layers,
      s.config.num_attention_heads, s.config.intermediate_size, s.config.max_position_embeddings,
      s.config.hidden_dropout_prob, s.seq, s.batch);
  return s;
}

/// One configuration: DDP (stage 0) or a ZeRO stage, with or without offload, with fp32 or
/// (DeepSpeed's bf16 mode) bf16 parameters and fp32 master shards.
struct Configuration {
  std::string name;
  int stage;
  bool offload;
  bool bf16 = false;
};

const std::vector<Configuration>& configurations() {
  static const std::vector<Configuration> all = {{"ddp", 0, false},
                                                 {"zero1", 1, false},
                                                 {"zero2", 2, false},
                                                 {"zero3", 3, false},
                                                 {"zero1_offload", 1, true},
                                                 {"zero2_offload", 2, true},
                                                 {"zero3_offload", 3, true},
                                                 {"zero2_bf16", 2, false, true},
                                                 {"zero3_bf16", 3, false, true}};
  return all;
}

/// The formulas for fp32 parameters and AdamW (two fp32 moments), in bytes per rank:
/// parameters / gradients / master / optimizer state. Offload keeps an fp32 master shard on
/// the CPU (4Psi/N) next to the parameters, and ZeRO-1 with offload also a gradient shard there
/// (the step runs on the CPU copy; see tests/e2e/sharded_test.cpp).
json formula(const Configuration& c, double psi, double n) {
  double parameters = 4 * psi, gradients = 4 * psi / n, master = 0, state = 8 * psi / n;
  std::string text;
  switch (c.stage) {
    case 0:
      gradients = 4 * psi;
      state = 8 * psi;
      text = "16Psi = 4Psi params + 4Psi grads + 8Psi Adam";
      break;
    case 1:
      gradients = 4 * psi;
      text = "8Psi + 8Psi/N = 4Psi params + 4Psi grads + 8Psi/N Adam";
      break;
    case 2:
      text = "4Psi + 12Psi/N = 4Psi params + 4Psi/N grads + 8Psi/N Adam";
      break;
    default:
      parameters = 4 * psi / n;
      text = "16Psi/N = 4Psi/N params + 4Psi/N grads + 8Psi/N Adam";
  }
  if (c.bf16) {
    // bf16 parameters; the gradient shards, the master and Adam's moments are fp32.
    parameters /= 2;
    master = 4 * psi / n;
    text = c.stage == 2 ? "2Psi + 16Psi/N = 2Psi bf16 params + 4Psi/N grads + 4Psi/N master + "
                          "8Psi/N Adam"
                        : "18Psi/N = 2Psi/N bf16 params + 4Psi/N grads + 4Psi/N master + 8Psi/N "
                          "Adam";
  }
  if (c.offload) {
    master = 4 * psi / n;
    text += " + 4Psi/N master on CPU";
    if (c.stage == 1) {
      gradients += 4 * psi / n;
      text += " + 4Psi/N CPU gradient shard";
    }
  }
  return {{"formula", text},          {"parameters", parameters},
          {"gradients", gradients},   {"master", master},
          {"optimizer_state", state}, {"total", parameters + gradients + master + state}};
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------
// Worker

/// A field of /proc/self/status in kB ("VmHWM", "VmRSS"), as bytes.
int64_t status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return 1024 * std::stoll(line.substr(field.size() + 1));
  return -1;
}

/// Resets VmHWM to the current RSS (Linux >= 4.0), so that a later VmHWM is the peak of what
/// ran since; false where /proc/self/clear_refs cannot be written.
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

/// Adds the bytes of each tensor's storage not counted yet (shared storage counts once, as in
/// ShardedStrategy::memory; DDP's gradients are views into its flat buckets).
int64_t count_new(const std::vector<at::Tensor>& tensors, std::unordered_set<const void*>& seen) {
  int64_t bytes = 0;
  for (const auto& t : tensors) {
    if (!t.defined() || !t.has_storage()) continue;
    if (!seen.insert(t.storage().unsafeGetStorageImpl()).second) continue;
    bytes += static_cast<int64_t>(t.storage().nbytes());
  }
  return bytes;
}

/// DDP's memory, walked the way ShardedStrategy::memory walks a sharded rank's.
ShardedMemory ddp_memory(torch::nn::Module& model, const torch::optim::AdamW& optimizer) {
  std::unordered_set<const void*> seen;
  std::vector<at::Tensor> parameters, gradients, state;
  for (const auto& p : model.parameters()) {
    parameters.push_back(p);
    gradients.push_back(p.grad());
  }
  for (const auto& [key, value] : optimizer.state()) {
    const auto& adamw = static_cast<const torch::optim::AdamWParamState&>(*value);
    state.insert(state.end(), {adamw.exp_avg(), adamw.exp_avg_sq(), adamw.max_exp_avg_sq()});
  }
  ShardedMemory memory;
  memory.parameters = count_new(parameters, seen);
  memory.gradients = count_new(gradients, seen);
  memory.optimizer_state = count_new(state, seen);
  return memory;
}

std::unique_ptr<CollectiveStrategy> make_strategy(ProcessGroup& group, const Configuration& c) {
  if (c.stage == 0) return std::make_unique<DDPStrategy>(group);
  ShardingOptions options;
  options.stage = static_cast<ShardingStage>(c.stage);
  options.offload_optimizer = c.offload;
  options.offload_params = c.offload && c.stage == 3;
  options.wrap_layer_classes = {"BertLayer"};
  if (c.bf16) options.parameter_dtype = at::kBFloat16;
  return std::make_unique<ShardedStrategy>(group, options);
}

void measure_in_worker(const std::string& out_prefix) {
  const Shape s = shape(std::getenv(kQuickEnv) != nullptr);
  const std::string config_name = std::getenv(kConfigEnv) ? std::getenv(kConfigEnv) : "";
  const auto& all = configurations();
  const auto found = std::find_if(all.begin(), all.end(),
                                  [&](const Configuration& c) { return c.name == config_name; });
  if (found == all.end()) throw std::runtime_error("unknown configuration '" + config_name + "'");
  const Configuration& c = *found;
  // One intra-op thread per process: 2 processes fill the 2 cores (ctrainer-bench ddp).
  at::set_num_threads(1);
  const ProcessInfo info = ProcessInfo::from_environment();
  ProcessGroupOptions group_options;
  group_options.timeout = std::chrono::seconds(600);
  ProcessGroup group(info, group_options);

  // Each rank its own data, the same batch every step: data loading is not measured.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(kInitSeed + info.rank);
  const Batch batch{
      {"input_ids", at::randint(0, s.config.vocab_size, {s.batch, s.seq}, gen, at::kLong)},
      {"labels", at::randint(0, 2, {s.batch}, gen, at::kLong)}};
  torch::manual_seed(kInitSeed);
  auto model = std::make_shared<BertForSequenceClassification>(s.config);
  model->train();
  const int64_t psi = model->num_parameters();
  auto strategy = make_strategy(group, c);
  strategy->setup(*model, c10::Device(c10::kCPU));
  torch::optim::AdamW optimizer(model->parameters(),
                                torch::optim::AdamWOptions(1e-4).weight_decay(0.01));
  strategy->setup_optimizer(optimizer);
  const int64_t rss_after_setup = status_bytes("VmRSS");
  const bool reset = reset_peak_rss();

  json out = {{"rank", info.rank}, {"psi", psi}, {"rss_after_setup", rss_after_setup}};
  std::vector<double> step_s, forward_s, backward_s, update_s;
  for (int64_t step = 0; step < s.warmup_steps + s.measured_steps; ++step) {
    const auto start = Clock::now();
    strategy->before_forward(*model);
    const at::Tensor loss = model->forward(batch).loss;
    const double forward = seconds_since(start);
    strategy->backward(loss, /*sync=*/true);
    const double backward = seconds_since(start) - forward;
    strategy->clip_grad_norm(*model, kMaxNorm);
    strategy->optimizer_step(optimizer);
    strategy->zero_grad(*model);
    const double total = seconds_since(start);
    if (step < s.warmup_steps) continue;
    step_s.push_back(total);
    forward_s.push_back(forward);
    backward_s.push_back(backward);
    update_s.push_back(total - forward - backward);
  }
  // After the last step, as tests/e2e/sharded_test.cpp checks the formulas.
  const auto* sharded = dynamic_cast<const ShardedStrategy*>(strategy.get());
  const ShardedMemory memory =
      sharded ? sharded->memory(&optimizer) : ddp_memory(*model, optimizer);
  int64_t padded = psi;
  if (sharded) {
    padded = 0;
    for (const auto& segment : sharded->segments()) padded += segment->layout().padded_numel();
  }
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  out["memory"] = {{"parameters", memory.parameters},
                   {"gradients", memory.gradients},
                   {"master", memory.master},
                   {"optimizer_state", memory.optimizer_state},
                   {"total", memory.total()}};
  out["padded_psi"] = padded;
  out["peak_rss_process"] = int64_t{1024} * usage.ru_maxrss;  // ru_maxrss is in kB on Linux
  out["peak_rss_training"] = reset ? status_bytes("VmHWM") : -1;
  out["rss_end"] = status_bytes("VmRSS");
  // What glibc keeps of the freed blocks (small tensors come from its heap, which it returns
  // to the kernel only on a trim) is RSS but no tensor's: trimmed, the RSS shows what is live.
  ::malloc_trim(0);
  out["rss_end_trimmed"] = status_bytes("VmRSS");
  out["step_seconds"] = step_s;
  out["forward_seconds"] = forward_s;
  out["backward_seconds"] = backward_s;
  out["update_seconds"] = update_s;
  strategy.reset();
  group.shutdown();
  std::ofstream(out_prefix + "." + std::to_string(info.rank) + ".json") << out.dump() << '\n';
}

/// The worker process: measures, writes its report and exits (0, or 3 after printing the
/// error; the parent then names the failed rank).
[[noreturn]] void run_worker(const std::string& out_prefix) {
  try {
    measure_in_worker(out_prefix);
  } catch (const std::exception& error) {
    const char* rank = std::getenv("RANK");
    std::fprintf(stderr, "ctrainer-bench sharding worker (RANK=%s): %s\n", rank ? rank : "0",
                 error.what());
    std::exit(3);
  }
  std::exit(0);
}

// ---------------------------------------------------------------------------------------------
// Parent

std::string mb(double bytes) {
  return fmt::format("{:.1f}", bytes / kMB);
}

BenchResult run_sharding(const BenchOptions& options) {
  if (const char* prefix = std::getenv(kWorkerEnv)) run_worker(prefix);
  const Shape s = shape(options.quick);
  const double load_before = load_average();
  const int64_t rounds = options.quick ? 1 : options.rounds;
  const auto& all = configurations();
  const auto n_configs = static_cast<int64_t>(all.size());

  // Per configuration: one median per round (rank 0's steps; the ranks meet in collectives
  // every step), and the last round's reports of both ranks (memory is the same every round).
  std::map<std::string, std::map<std::string, std::vector<double>>> per_round;
  std::map<std::string, std::vector<json>> reports;
  std::map<std::string, std::vector<int64_t>> peak_process, peak_training;
  const auto started = Clock::now();
  for (int64_t round = 0; round < rounds; ++round) {
    for (int64_t k = 0; k < n_configs; ++k) {
      const Configuration& c = all[static_cast<std::size_t>((k + round) % n_configs)];
      WorkerLaunch launch{"sharding", kWorkerEnv, kWorld, {}};
      launch.env.push_back(fmt::format("{}={}", kConfigEnv, c.name));
      launch.env.push_back("OMP_NUM_THREADS=1");
      if (options.quick) launch.env.push_back(fmt::format("{}=1", kQuickEnv));
      auto r = run_workers(launch);
      for (const std::string key :
           {"step_seconds", "forward_seconds", "backward_seconds", "update_seconds"})
        per_round[c.name][key].push_back(median(r[0][key].get<std::vector<double>>()));
      for (const auto& rank : r) {
        peak_process[c.name].push_back(rank["peak_rss_process"].get<int64_t>());
        peak_training[c.name].push_back(rank["peak_rss_training"].get<int64_t>());
      }
      std::fprintf(stderr, "sharding: round %lld/%lld %-14s step %.0f ms (%.0f s elapsed)\n",
                   static_cast<long long>(round + 1), static_cast<long long>(rounds),
                   c.name.c_str(), 1000 * per_round[c.name]["step_seconds"].back(),
                   seconds_since(started));
      reports[c.name] = std::move(r);
    }
  }

  const double psi = reports["ddp"][0]["psi"].get<double>();
  BenchResult result;
  result.scenario = "sharding";
  auto& cfg = result.config;
  cfg["model"] = s.description;
  cfg["parameters_psi"] = psi;
  cfg["processes"] = kWorld;
  cfg["threads_per_process"] = 1;
  cfg["backend"] = "Gloo on 127.0.0.1 (CPU)";
  cfg["optimizer"] = fmt::format(
      "torch::optim::AdamW lr 1e-4 weight decay 0.01 (fp32), clip "
      "grad norm {}",
      kMaxNorm);
  cfg["strategies"] =
      "ddp: DDPStrategy (torch's default 25 MiB buckets); zeroK: ShardedStrategy stage K with "
      "ShardingOptions defaults (reduce_bucket_elements 5e8, overlap_comm, backward prefetch "
      "BACKWARD_PRE), ZeRO-3 wrapping BertLayer; _offload: offload_optimizer (and offload_params "
      "for ZeRO-3); _bf16: bf16 parameters with fp32 master shards (DeepSpeed's bf16 mode)";
  cfg["device"] = "cpu";
  cfg["hardware_threads"] = std::thread::hardware_concurrency();
  cfg["rounds"] = rounds;
  cfg["steps_per_run"] =
      fmt::format("{} warm-up + {} measured (median per run, rank 0; table = median over rounds)",
                  s.warmup_steps, s.measured_steps);
  cfg["step"] =
      "before_forward + forward + backward (sync) + clip_grad_norm + optimizer_step + "
      "zero_grad; forward = before_forward + forward, update = clip + step + zero_grad";
  cfg["memory"] =
      "bytes of parameters / gradients / master / optimizer state one rank holds after the last "
      "step, each storage counted once: ShardedStrategy::memory(&optimizer); for ddp the same "
      "walk over model.parameters(), their .grad and AdamW's state";
  cfg["peak_rss"] =
      "process: getrusage ru_maxrss (includes building the full model before setup); training: "
      "VmHWM after resetting it (/proc/self/clear_refs = 5) once setup and setup_optimizer were "
      "done; max over the ranks and rounds";
  cfg["load_average_1min"] = {{"before", load_before}, {"after", load_average()}};

  auto& m = result.metrics;
  result.header = {"configuration",
                   "params MB",
                   "grads MB",
                   "master MB",
                   "optim MB",
                   "total MB",
                   "formula MB",
                   "peak RSS MB (train)",
                   "peak RSS MB (proc)",
                   "RSS end MB (trimmed)",
                   "step ms",
                   "fwd/bwd/upd ms"};
  for (const auto& c : all) {
    const json& rank0 = reports[c.name][0];
    const json want = formula(c, psi, kWorld);
    auto& row = m[c.name];
    row["memory_bytes"] = rank0["memory"];
    row["memory_bytes_rank1"] = reports[c.name][1]["memory"];
    row["formula_bytes"] = want;
    row["measured_over_formula"] =
        rank0["memory"]["total"].get<double>() / want["total"].get<double>();
    row["padded_psi"] = rank0["padded_psi"];
    row["rss_after_setup_bytes"] = rank0["rss_after_setup"];
    row["rss_end_bytes"] = rank0["rss_end"];
    row["rss_end_trimmed_bytes"] = rank0["rss_end_trimmed"];
    const auto max_of = [](const std::vector<int64_t>& v) {
      return *std::max_element(v.begin(), v.end());
    };
    row["peak_rss_process_bytes"] = max_of(peak_process[c.name]);
    row["peak_rss_training_bytes"] = max_of(peak_training[c.name]);
    for (const auto& [key, samples] : per_round[c.name]) {
      std::vector<double> ms;
      for (double v : samples) ms.push_back(1000 * v);
      const std::string name = key.substr(0, key.find('_'));
      row[name + "_ms"] = median(ms);
      row[name + "_ms_per_round"] = ms;
    }
    row["step_vs_ddp"] =
        median(per_round[c.name]["step_seconds"]) / median(per_round["ddp"]["step_seconds"]);
    const json& mem = rank0["memory"];
    result.rows.push_back(
        {{c.name, mb(mem["parameters"].get<double>()), mb(mem["gradients"].get<double>()),
          mb(mem["master"].get<double>()), mb(mem["optimizer_state"].get<double>()),
          mb(mem["total"].get<double>()), mb(want["total"].get<double>()),
          mb(row["peak_rss_training_bytes"].get<double>()),
          mb(row["peak_rss_process_bytes"].get<double>()),
          fmt::format("{} ({})", mb(rank0["rss_end"].get<double>()),
                      mb(rank0["rss_end_trimmed"].get<double>())),
          fmt::format("{:.0f}", row["step_ms"].get<double>()),
          fmt::format("{:.0f}/{:.0f}/{:.0f}", row["forward_ms"].get<double>(),
                      row["backward_ms"].get<double>(), row["update_ms"].get<double>())}});
  }
  return result;
}

}  // namespace

Scenario sharding_scenario() {
  return {"sharding",
          "DDP vs ZeRO-1/2/3 (+ offload) on CPU (Gloo, 2 processes): memory per rank against "
          "the ZeRO formulas, peak RSS, step time",
          run_sharding};
}

}  // namespace ctrainer::bench
