// Scenario seq2seq_vs_hf: ctrainer's run_summarization against transformers' Seq2SeqTrainer on
// HF's run_summarization.py recipe (benchmarks/reference/hf_seq2seq_trainer.py), a T5 of
// T5-small's shape (6 + 6 layers, 512 wide, 60 M parameters with the bundled 7,600-token
// tokenizer's vocabulary rounded up to 8,000) trained from a config on the bundled man-page
// summaries (sources of at most 128 tokens with "summarize: ", targets of at most 32), batch 8,
// sequential order, each side a separate process with 2 intra-op threads, the sides alternating
// (the order swapped each round) for --rounds rounds. Both sides tokenize alike (the tokenizer
// parity tests) and pad each batch to its longest source and target (DataCollatorForSeq2Seq), so
// every step has the same shapes: equal FLOPs. Issue 34's targets: >= 1.25x HF's samples/s,
// <= 0.7x its peak RSS.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_commands.h"
#include "bench_process.h"
#include "bench_report.h"
#include "bench_workers.h"
#include "vs_hf/vs_hf_sides.h"

#ifndef CTRAINER_BENCH_RUN_SUMMARIZATION_DEFAULT
#define CTRAINER_BENCH_RUN_SUMMARIZATION_DEFAULT ""
#endif

namespace ctrainer::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kThreads = 2;
constexpr int64_t kDefaultRounds = 3;
constexpr double kSpeedTarget = 1.25, kRssTarget = 0.7;

struct Side {
  std::string name;
  bool ours;
};

struct Setup {
  std::string python, run_summarization, source_dir, config;
  int64_t steps = 20, batch = 8;
  std::string data() const { return source_dir + "/examples/data/seq2seq"; }
};

std::vector<std::string> side_command(const Side& side, const Setup& s, const std::string& dir) {
  const std::vector<std::string> common = {"--train_file",
                                           s.data() + "/summarization/train.json",
                                           "--tokenizer_name",
                                           s.data() + "/t5-unigram-8k",
                                           "--config_name",
                                           s.config,
                                           "--max_source_length",
                                           "128",
                                           "--max_target_length",
                                           "32",
                                           "--max_steps",
                                           std::to_string(s.steps),
                                           "--per_device_train_batch_size",
                                           std::to_string(s.batch),
                                           "--learning_rate",
                                           "1e-3",
                                           "--seed",
                                           "42",
                                           "--source_prefix",
                                           "summarize: "};
  std::vector<std::string> cmd;
  if (side.ours) {
    cmd = {s.run_summarization,
           "--do_train",
           "--output_dir",
           dir + "/output",
           "--use_cpu",
           "true",
           "--save_strategy",
           "no",
           "--report_to",
           "none",
           "--disable_tqdm",
           "true",
           "--dataloader_num_workers",
           "0",
           "--train_sampling_strategy",
           "sequential",
           "--logging_steps",
           std::to_string(s.steps)};
  } else {
    cmd = {s.python,        s.source_dir + "/benchmarks/reference/hf_seq2seq_trainer.py",
           "--output_dir",  dir + "/output",
           "--result_json", dir + "/result.json",
           "--threads",     std::to_string(kThreads)};
  }
  cmd.insert(cmd.end(), common.begin(), common.end());
  return cmd;
}

struct SideRun {
  double samples_per_s = 0, train_loss = 0, peak_rss_mb = 0;
};

SideRun run_side(const Side& side, const Setup& s, const std::string& dir, std::string& command) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto cmd = side_command(side, s, dir);
  command = join_command(cmd);
  ChildSpec spec{
      cmd,
      {fmt::format("OMP_NUM_THREADS={}", kThreads), fmt::format("MKL_NUM_THREADS={}", kThreads),
       "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1",
       "TOKENIZERS_PARALLELISM=false"},
      dir + "/stdout.log",
      dir + "/stderr.log",
      3600};
  const ChildResult child = run_child(spec);
  if (!child.ok())
    throw std::runtime_error(fmt::format("seq2seq_vs_hf: {} failed ({})\n  command: {}\n{}",
                                         side.name, child.describe(3600), command,
                                         file_tail(spec.stderr_path, 30)));
  std::ifstream in(side.ours ? dir + "/output/train_results.json" : dir + "/result.json");
  const json train = json::parse(in);
  SideRun run;
  run.samples_per_s = train.at("train_samples_per_second").get<double>();
  run.train_loss = train.at("train_loss").get<double>();
  run.peak_rss_mb = static_cast<double>(child.max_rss_kb) / 1024.0;
  fs::remove_all(dir);
  return run;
}

BenchResult run_seq2seq_vs_hf(const BenchOptions& options) {
  const vs_hf::Paths paths = vs_hf::resolve_paths(false);
  Setup setup;
  setup.python = paths.python;
  setup.source_dir = paths.source_dir;
  const char* env = std::getenv("CTRAINER_BENCH_RUN_SUMMARIZATION");
  setup.run_summarization = env && *env ? env : CTRAINER_BENCH_RUN_SUMMARIZATION_DEFAULT;
  if (setup.run_summarization.empty() || ::access(setup.run_summarization.c_str(), X_OK) != 0)
    throw std::runtime_error("seq2seq_vs_hf needs run_summarization (" + setup.run_summarization +
                             "): build it or set CTRAINER_BENCH_RUN_SUMMARIZATION");
  const int64_t rounds = options.rounds_given ? options.rounds : kDefaultRounds;
  const fs::path root =
      fs::temp_directory_path() / fmt::format("ctrainer_bench_s2s_{}", ::getpid());
  fs::create_directories(root);
  setup.config = (root / "t5.json").string();
  json config = {
      {"model_type", "t5"}, {"vocab_size", 8000}, {"d_model", 512}, {"d_kv", 64},
      {"d_ff", 2048},       {"num_layers", 6},    {"num_heads", 8}, {"decoder_start_token_id", 0},
      {"pad_token_id", 0},  {"eos_token_id", 1}};
  if (options.quick) {
    config.update(
        {{"d_model", 32}, {"d_kv", 8}, {"d_ff", 64}, {"num_layers", 2}, {"num_heads", 4}});
    setup.steps = 2;
  }
  std::ofstream(setup.config) << config.dump(1);
  const std::vector<Side> sides = {{"ctrainer", true}, {"hf_seq2seq_trainer", false}};
  std::map<std::string, std::vector<SideRun>> runs;
  json commands;
  for (int64_t round = 0; round < rounds; ++round)
    for (int k = 0; k < 2; ++k) {
      const Side& side = sides[static_cast<size_t>((k + round) % 2)];
      std::fprintf(stderr, "seq2seq_vs_hf: round %lld/%lld: %s ...\n",
                   static_cast<long long>(round + 1), static_cast<long long>(rounds),
                   side.name.c_str());
      std::string command;
      SideRun run =
          run_side(side, setup, (root / fmt::format("r{}_{}", round, side.name)).string(), command);
      std::fprintf(stderr, "seq2seq_vs_hf:   %.3f samples/s, train_loss %.4f, peak RSS %.0f MiB\n",
                   run.samples_per_s, run.train_loss, run.peak_rss_mb);
      if (round == 0) commands[side.name] = command;
      runs[side.name].push_back(run);
    }
  fs::remove_all(root);

  BenchResult result;
  result.scenario = "seq2seq_vs_hf";
  result.header = {"quantity", "ctrainer", "hf_seq2seq_trainer", "ours/HF", "target", "met"};
  result.config = {{"model", options.quick ? "tiny T5" : "T5-small's shape, vocabulary 8,000"},
                   {"data", "examples/data/seq2seq/summarization/train.json"},
                   {"batch", setup.batch},
                   {"max_steps", setup.steps},
                   {"threads_per_side", kThreads},
                   {"rounds", rounds},
                   {"alternating", true},
                   {"equal_flops", true},
                   {"commands", commands},
                   {"load_average_end", load_average()}};
  json medians;
  for (const Side& side : sides) {
    std::vector<double> speed, rss, loss;
    for (const SideRun& r : runs[side.name]) {
      speed.push_back(r.samples_per_s);
      rss.push_back(r.peak_rss_mb);
      loss.push_back(r.train_loss);
    }
    result.metrics["sides"][side.name] = {
        {"samples_per_s", speed}, {"peak_rss_mb", rss}, {"train_loss", loss}};
    medians[side.name] = {{"samples_per_s", median(speed)}, {"peak_rss_mb", median(rss)}};
  }
  const double speed_ratio = medians["ctrainer"]["samples_per_s"].get<double>() /
                             medians["hf_seq2seq_trainer"]["samples_per_s"].get<double>();
  const double rss_ratio = medians["ctrainer"]["peak_rss_mb"].get<double>() /
                           medians["hf_seq2seq_trainer"]["peak_rss_mb"].get<double>();
  result.metrics["ratios"] = {{"samples_per_s", speed_ratio}, {"peak_rss_mb", rss_ratio}};
  result.metrics["targets"] = {{"samples_per_s", kSpeedTarget},
                               {"peak_rss_mb", kRssTarget},
                               {"samples_per_s_met", speed_ratio >= kSpeedTarget},
                               {"peak_rss_mb_met", rss_ratio <= kRssTarget}};
  auto row = [&](const std::string& quantity, const char* key, double ratio, double target,
                 bool met, const char* relation) {
    result.rows.push_back({{quantity, fmt::format("{:.2f}", medians["ctrainer"][key].get<double>()),
                            fmt::format("{:.2f}", medians["hf_seq2seq_trainer"][key].get<double>()),
                            fmt::format("{:.2f}x", ratio),
                            fmt::format("{} {:.2f}", relation, target), met ? "yes" : "no"}});
  };
  row("samples/s (median)", "samples_per_s", speed_ratio, kSpeedTarget, speed_ratio >= kSpeedTarget,
      ">=");
  row("peak RSS MiB (median)", "peak_rss_mb", rss_ratio, kRssTarget, rss_ratio <= kRssTarget, "<=");
  return result;
}

}  // namespace

Scenario seq2seq_vs_hf_scenario() {
  return {"seq2seq_vs_hf",
          "run_summarization against transformers' Seq2SeqTrainer (run_summarization.py's "
          "recipe), a T5-small-shaped model from a config: samples/s and peak RSS, alternating",
          run_seq2seq_vs_hf};
}

}  // namespace ctrainer::bench
