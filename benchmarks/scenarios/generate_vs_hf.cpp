// Scenario generate_vs_hf: ctrainer's generation::generate() against transformers' generate() on
// the same random T5 of T5-small's shape (6 + 6 layers, 512 wide, 32,128-token vocabulary; made
// and saved by benchmarks/reference/hf_generate.py) and the same prompts of 64 tokens, 2 intra-op
// threads on each side, the sides alternating (the order swapped each round) for --rounds rounds:
//  - greedy_batch1: greedy search, batch 1, 64 new tokens (issue 34's target: >= 2x tokens/s);
//  - beam4_batch8: beam search with 4 beams, batch 8, 64 new tokens (target: >= 1.3x).
// min_new_tokens = max_new_tokens, so both sides generate exactly the same number of tokens
// (no early eos): equal work, checked by comparing the generated ids of the two sides. The HF
// side is a separate Python process; only its generate() calls are timed, after a warm-up
// call, as ours are.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/utils.h>
#include <nlohmann/json.hpp>

#include <ctrainer/models/generation/generate.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/seq2seq_lm.h>

#include "bench_process.h"
#include "bench_report.h"
#include "bench_workers.h"
#include "vs_hf/vs_hf_sides.h"

namespace ctrainer::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kThreads = 2;
constexpr int64_t kDefaultRounds = 3;

struct GenerateWorkload {
  std::string name, description;
  int64_t batch, num_beams, new_tokens, repeats;
  double target;  ///< ours / HF tokens per second, issue 34
};

std::vector<GenerateWorkload> workloads(bool quick) {
  if (quick) return {{"greedy_tiny", "a smoke test", 1, 1, 4, 1, 0}};
  return {{"greedy_batch1", "greedy search, batch 1, 64 new tokens", 1, 1, 64, 3, 2.0},
          {"beam4_batch8", "beam search 4, batch 8, 64 new tokens", 8, 4, 64, 2, 1.3}};
}

/// Runs hf_generate.py with `args`; returns its stdout as JSON.
json run_reference(const vs_hf::Paths& paths, const std::vector<std::string>& args,
                   const fs::path& dir, const std::string& tag) {
  ChildSpec spec;
  spec.argv = {paths.python, paths.scripts() + "/hf_generate.py"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = {"OMP_NUM_THREADS=" + std::to_string(kThreads), "TOKENIZERS_PARALLELISM=false"};
  spec.stdout_path = (dir / (tag + ".out")).string();
  spec.stderr_path = (dir / (tag + ".err")).string();
  spec.timeout_seconds = 1800;
  const ChildResult result = run_child(spec);
  if (!result.ok())
    throw std::runtime_error("hf_generate.py " + args.front() + " failed (" +
                             result.describe(spec.timeout_seconds) + "):\n" +
                             file_tail(spec.stderr_path, 20));
  if (args.front() != "time") return json::object();
  std::ifstream out(spec.stdout_path);
  return json::parse(out);
}

std::vector<std::vector<int64_t>> rows_of(const at::Tensor& tensor) {
  std::vector<std::vector<int64_t>> rows;
  const at::Tensor t = tensor.contiguous();
  for (int64_t i = 0; i < t.size(0); ++i) {
    const int64_t* p = t[i].data_ptr<int64_t>();
    rows.emplace_back(p, p + t.size(1));
  }
  return rows;
}

struct OurTiming {
  std::vector<double> seconds;
  std::vector<std::vector<int64_t>> sequences;
};

OurTiming time_ours(Seq2SeqLanguageModel& model, const generation::GenerationConfig& defaults,
                    const at::Tensor& prompts, const GenerateWorkload& w) {
  const at::Tensor ids = prompts.narrow(0, 0, w.batch).contiguous();
  const at::Tensor mask = at::ones_like(ids);
  generation::GenerationConfig call;
  call.num_beams = w.num_beams;
  call.max_new_tokens = w.new_tokens;
  call.min_new_tokens = w.new_tokens;
  call.do_sample = false;
  torch::NoGradGuard no_grad;
  OurTiming out;
  out.sequences = rows_of(generation::generate(model, ids, mask, call, defaults).sequences);
  for (int64_t r = 0; r < w.repeats; ++r) {
    const auto start = Clock::now();
    generation::generate(model, ids, mask, call, defaults);
    out.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return out;
}

BenchResult run_generate_vs_hf(const BenchOptions& options) {
  const vs_hf::Paths paths = vs_hf::resolve_paths(false);
  const int64_t rounds = options.rounds_given ? options.rounds : kDefaultRounds;
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("ctrainer_generate_vs_hf_{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string model_dir = (dir / "t5").string(),
                    prompts_file = (dir / "prompts.json").string();
  std::vector<std::string> make = {"make", "--model_dir", model_dir, "--prompts", prompts_file};
  if (options.quick) make.push_back("--quick");
  run_reference(paths, make, dir, "make");

  at::set_num_threads(kThreads);
  auto model = AutoModel::from_pretrained(model_dir, ModelTask::kSeq2SeqLM);
  model->eval();
  auto* generator = dynamic_cast<Seq2SeqLanguageModel*>(model.get());
  const auto defaults = generation::GenerationConfig::for_model_folder(model_dir);
  std::ifstream prompts_in(prompts_file);
  const auto prompt_rows = json::parse(prompts_in).get<std::vector<std::vector<int64_t>>>();
  std::vector<int64_t> flat;
  for (const auto& row : prompt_rows) flat.insert(flat.end(), row.begin(), row.end());
  const at::Tensor prompts =
      at::tensor(flat, at::kLong).reshape({static_cast<int64_t>(prompt_rows.size()), -1});

  BenchResult result;
  result.scenario = "generate_vs_hf";
  result.header = {"workload", "ours tok/s", "HF tok/s", "ratio", "target"};
  result.config = {{"model", options.quick ? "tiny T5" : "random T5 of T5-small's shape (60 M)"},
                   {"prompt_tokens", 64},
                   {"threads_per_side", kThreads},
                   {"rounds", rounds},
                   {"alternating", true},
                   {"equal_work", "min_new_tokens = max_new_tokens; generated ids compared"},
                   {"load_average_start", load_average()}};
  for (const GenerateWorkload& w : workloads(options.quick)) {
    std::vector<double> ours, theirs;
    bool same_ids = true;
    for (int64_t round = 0; round < rounds; ++round) {
      auto run_hf = [&] {
        const json hf =
            run_reference(paths,
                          {"time", "--model_dir", model_dir, "--prompts", prompts_file, "--batch",
                           std::to_string(w.batch), "--num_beams", std::to_string(w.num_beams),
                           "--new_tokens", std::to_string(w.new_tokens), "--repeats",
                           std::to_string(w.repeats), "--threads", std::to_string(kThreads)},
                          dir, w.name);
        for (double s : hf["seconds"]) theirs.push_back(s);
        return hf["sequences"].get<std::vector<std::vector<int64_t>>>();
      };
      auto run_ours = [&] {
        OurTiming timing = time_ours(*generator, defaults, prompts, w);
        ours.insert(ours.end(), timing.seconds.begin(), timing.seconds.end());
        return timing.sequences;
      };
      std::vector<std::vector<int64_t>> hf_ids, our_ids;
      if (round % 2 == 0) {
        our_ids = run_ours();
        hf_ids = run_hf();
      } else {
        hf_ids = run_hf();
        our_ids = run_ours();
      }
      same_ids = same_ids && hf_ids == our_ids;
    }
    const double tokens = static_cast<double>(w.batch * w.new_tokens);
    const double ours_tps = tokens / median(ours), hf_tps = tokens / median(theirs);
    const double ratio = ours_tps / hf_tps;
    result.metrics[w.name] = {{"description", w.description},
                              {"ours_tokens_per_second", ours_tps},
                              {"hf_tokens_per_second", hf_tps},
                              {"ratio", ratio},
                              {"target", w.target},
                              {"meets_target", w.target == 0 || ratio >= w.target},
                              {"same_generated_ids", same_ids},
                              {"ours_seconds", ours},
                              {"hf_seconds", theirs}};
    result.rows.push_back({{w.name, fmt::format("{:.1f}", ours_tps), fmt::format("{:.1f}", hf_tps),
                            fmt::format("{:.2f}x", ratio),
                            w.target > 0 ? fmt::format(">= {:.2f}x", w.target) : "-"}});
    if (!same_ids)
      throw std::runtime_error("generate_vs_hf " + w.name +
                               ": the two sides generated different ids, so their work differs");
  }
  result.config["load_average_end"] = load_average();
  fs::remove_all(dir);
  return result;
}

}  // namespace

Scenario generate_vs_hf_scenario() {
  return {"generate_vs_hf",
          "generate() against transformers' generate() on a T5-small-shaped model: greedy "
          "batch 1 and beam search 4 batch 8, tokens/s, sides alternating",
          run_generate_vs_hf};
}

}  // namespace ctrainer::bench
