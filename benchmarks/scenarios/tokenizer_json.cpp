// Scenario tokenizer_json (issue 32 item 5): our tokenizer.json pipeline (PipelineTokenizer)
// against HF's Rust `tokenizers` on the same files and texts, side by side in one run.
//
// benchmarks/reference/tokenizers_speed.py builds the two tokenizer.json files with the
// `tokenizers` package (byte-level BPE trained on the GLUE train text as GPT-2's; WordPiece with
// the bundled bert-base-uncased vocabulary) and writes the texts: SST-2 train sentences and MRPC
// train pairs. Then, for each tokenizer and for 1 thread and all hardware threads, the sides
// alternate (ours, Rust, ours, Rust, ...), each run its own process: ours is this binary again
// as a worker (tokenizer_json/tokenizer_json_worker.h), Rust's is the script's `encode` under
// RAYON_NUM_THREADS. Each side encodes everything once as a warm-up and once timed; its peak RSS
// is wait4's ru_maxrss of its process. Both sides must produce the same number of tokens.
//
// Also: one word of 10k, 100k, 1M and 4M ASCII letters through the BPE tokenizer on each side,
// as the process runs and with malloc keeping freed memory (our BPE must grow linearly, the 1M
// word in well under a second), and our pipeline's steps timed one by one (where our time goes).
//
// Targets: ours / Rust tokens/s >= 1.0 per thread for BPE and WordPiece, on 1 thread and on all
// threads; the 1 MB word under 1 s; the cost per letter growing less than a log factor would.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "bench_process.h"
#include "bench_report.h"
#include "bench_workers.h"
#include "tokenizer_json/tokenizer_json_worker.h"

#ifndef CTRAINER_BENCH_PYTHON_DEFAULT
#define CTRAINER_BENCH_PYTHON_DEFAULT ""
#endif

namespace ctrainer::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kChildTimeoutSeconds = 600;
constexpr int64_t kDefaultRounds = 5;
constexpr int64_t kOneMillion = 1000000;
const char* const kTokenizers[] = {"bpe", "wordpiece"};
/// The worker's "stages" in pipeline order (its JSON object comes back sorted by name).
const char* const kStageOrder[] = {"utf8_check",    "added_tokens", "normalizer",
                                   "pre_tokenizer", "model",        "tokens_to_encoding",
                                   "post_processor"};

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

/// The worker process: runs the job in the variable, prints its result, exits (1 on error).
[[noreturn]] void run_worker(const char* job) {
  try {
    const json result = tokenizer_json::run_worker_job(json::parse(job));
    std::printf("%s\n", result.dump().c_str());
    std::fflush(stdout);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ctrainer-bench tokenizer_json worker: %s\n", error.what());
    std::exit(1);
  }
  std::exit(0);
}

struct Setup {
  std::string python, script, self, workdir;
};

Setup resolve_setup() {
  Setup s;
  s.python = env_or("CTRAINER_BENCH_PYTHON", CTRAINER_BENCH_PYTHON_DEFAULT);
  const std::string source = env_or("CTRAINER_BENCH_SOURCE_DIR", CTRAINER_BENCH_SOURCE_DIR_DEFAULT);
  s.script = source + "/benchmarks/reference/tokenizers_speed.py";
  if (s.python.empty() || ::access(s.python.c_str(), X_OK) != 0)
    throw std::runtime_error(
        "tokenizer_json needs the tests' Python venv with `tokenizers` (" +
        (s.python.empty() ? std::string("none configured") : s.python + " is not executable") +
        "): configure with -DCTRAINER_PYTHON=$(scripts/install-deps.sh --print-venv)/bin/python "
        "or set CTRAINER_BENCH_PYTHON");
  if (!fs::is_regular_file(s.script))
    throw std::runtime_error("tokenizer_json: no " + s.script +
                             "; set CTRAINER_BENCH_SOURCE_DIR to the ctrainer source tree");
  s.self = fs::read_symlink("/proc/self/exe").string();
  s.workdir =
      (fs::temp_directory_path() / fmt::format("ctrainer_bench_tokenizer_json_{}", getpid()))
          .string();
  fs::create_directories(s.workdir);
  return s;
}

/// One child process; returns its last stdout line as JSON with "wait4_maxrss_mb" added. (The
/// sides' peak is the VmHWM they report themselves: wait4's ru_maxrss of a posix_spawn child
/// is at least this parent's peak, which Linux's exec carries over.)
json run_json_child(const Setup& s, const std::string& label, std::vector<std::string> argv,
                    std::vector<std::string> env) {
  ChildSpec spec{std::move(argv), std::move(env), s.workdir + "/" + label + ".out",
                 s.workdir + "/" + label + ".err", kChildTimeoutSeconds};
  const ChildResult child = run_child(spec);
  if (!child.ok())
    throw std::runtime_error(fmt::format("tokenizer_json: {} {}:\n{}", label,
                                         child.describe(kChildTimeoutSeconds),
                                         file_tail(spec.stderr_path, 20)));
  std::ifstream in(spec.stdout_path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  json result = json::parse(last, nullptr, false);
  if (!result.is_object())
    throw std::runtime_error("tokenizer_json: " + label + " printed no JSON result (see " +
                             spec.stdout_path + ")");
  result["wait4_maxrss_mb"] = static_cast<double>(child.max_rss_kb) / 1024.0;
  return result;
}

/// Our worker: this binary with the job in the environment. CTRAINER_CUDA=off: a tokenizer
/// needs no CUDA libraries, and their hundreds of MB would count in our peak RSS.
json run_ours(const Setup& s, const std::string& label, const json& job,
              const std::vector<std::string>& more_env = {}) {
  std::vector<std::string> env = {std::string(tokenizer_json::kWorkerEnv) + "=" + job.dump(),
                                  "CTRAINER_CUDA=off"};
  env.insert(env.end(), more_env.begin(), more_env.end());
  return run_json_child(s, label, {s.self, "tokenizer_json"}, std::move(env));
}

json run_rust(const Setup& s, const std::string& label, std::vector<std::string> args, int threads,
              const std::vector<std::string>& more_env = {}) {
  args.insert(args.begin(), {s.python, s.script});
  std::vector<std::string> env = {fmt::format("RAYON_NUM_THREADS={}", threads),
                                  "TOKENIZERS_PARALLELISM=true"};
  env.insert(env.end(), more_env.begin(), more_env.end());
  return run_json_child(s, label, std::move(args), std::move(env));
}

/// glibc's malloc keeping freed memory for reuse: without it, every block over 32 MB is a fresh
/// mmap whose pages the kernel faults in and zeroes on first touch, a cost per byte that a
/// long word's buffers (over 100 bytes per letter across the pipeline) pay on every encode.
const char* const kMallocKeepsMemory =
    "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=2147483647:glibc.malloc.trim_threshold=4294967295";

double median_of(const std::vector<json>& runs, const std::function<double(const json&)>& f) {
  std::vector<double> values;
  for (const auto& r : runs) values.push_back(f(r));
  return median(values);
}

/// The medians of one side's runs of one configuration.
json side_summary(const std::vector<json>& runs) {
  const auto per = [&](auto f) { return median_of(runs, f); };
  return {
      {"tokens_per_s",
       per([](const json& r) { return r["tokens"].get<double>() / r["seconds"].get<double>(); })},
      {"tokens_per_s_per_thread", per([](const json& r) {
         return r["tokens"].get<double>() / r["seconds"].get<double>() / r["threads"].get<double>();
       })},
      {"mb_per_s", per([](const json& r) {
         return r["bytes"].get<double>() / 1e6 / r["seconds"].get<double>();
       })},
      {"seconds", per([](const json& r) { return r["seconds"].get<double>(); })},
      // CPU time / wall time of the timed pass: how many threads really worked.
      {"cpu_per_wall", per([](const json& r) {
         return r["cpu_seconds"].get<double>() / r["seconds"].get<double>();
       })},
      {"voluntary_switches",
       per([](const json& r) { return r["voluntary_switches"].get<double>(); })},
      {"peak_rss_mb", per([](const json& r) { return r["peak_rss_mb"].get<double>(); })},
      {"start_rss_mb", per([](const json& r) { return r["start_rss_mb"].get<double>(); })},
      {"peak_rise_mb", per([](const json& r) {
         return r["peak_rss_mb"].get<double>() - r["start_rss_mb"].get<double>();
       })},
      {"runs", runs}};
}

std::string fmt_int(double v) {
  return fmt::format("{:.0f}", v);
}
std::string fmt_2(double v) {
  return fmt::format("{:.2f}", v);
}

BenchResult run_tokenizer_json(const BenchOptions& options) {
  if (const char* job = std::getenv(tokenizer_json::kWorkerEnv)) run_worker(job);
  const Setup s = resolve_setup();
  const int64_t rounds = options.rounds_given ? options.rounds : kDefaultRounds;
  const int all_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> thread_counts{1};
  if (all_threads > 1) thread_counts.push_back(all_threads);
  const double load_before = load_average();

  // The files both sides read.
  std::vector<std::string> make_args{"make", s.workdir};
  if (options.quick) make_args.push_back("--quick");
  const json made = run_rust(s, "make", make_args, all_threads);
  const std::string texts = s.workdir + "/texts.jsonl";
  const auto tokenizer_path = [&](const std::string& t) { return s.workdir + "/" + t + ".json"; };

  BenchResult result;
  result.scenario = "tokenizer_json";
  result.header = {"measure", "ours", "Rust tokenizers", "ours / Rust"};
  result.config = {{"texts", "SST-2 train sentences + MRPC train pairs (GLUE, bundled)"},
                   {"text_count", made["texts"]},
                   {"pairs", made["pairs"]},
                   {"bpe", fmt::format("byte-level BPE as GPT-2's, trained on the GLUE train "
                                       "text, vocab {}",
                                       made["bpe_vocab"].get<int64_t>())},
                   {"wordpiece",
                    "bert-base-uncased vocab, BertNormalizer, BertPreTokenizer, "
                    "[CLS]/[SEP] template"},
                   {"tokenizers_version", made["tokenizers_version"]},
                   {"rounds", rounds},
                   {"order", "per round and configuration: ours, then Rust (separate processes)"},
                   {"hardware_threads", all_threads},
                   {"rust_threads", "RAYON_NUM_THREADS=N, TOKENIZERS_PARALLELISM=true"},
                   {"our_threads", "N std::threads, contiguous chunks of equal bytes"},
                   {"add_special_tokens", true},
                   {"quick", options.quick}};

  // Speed: round-major, so that a slow minute of the shared machine hits every configuration.
  std::map<std::string, std::vector<json>> ours, rust;
  const auto key_of = [](const std::string& t, int threads) {
    return t + (threads == 1 ? "/1_thread" : "/all_threads");
  };
  for (int64_t r = 0; r < rounds; ++r)
    for (const std::string t : kTokenizers)
      for (const int threads : thread_counts) {
        const std::string key = key_of(t, threads);
        const std::string label = fmt::format("{}_{}t_r{}", t, threads, r);
        ours[key].push_back(run_ours(s, "ours_" + label,
                                     {{"mode", "encode"},
                                      {"tokenizer", tokenizer_path(t)},
                                      {"texts", texts},
                                      {"threads", threads}}));
        rust[key].push_back(run_rust(s, "rust_" + label,
                                     {"encode", tokenizer_path(t), texts, std::to_string(threads)},
                                     threads));
        std::fprintf(stderr, "tokenizer_json: round %lld %s: ours %.3f s, Rust %.3f s\n",
                     static_cast<long long>(r + 1), key.c_str(),
                     ours[key].back()["seconds"].get<double>(),
                     rust[key].back()["seconds"].get<double>());
      }

  bool speed_met = true;
  std::map<std::string, int64_t> tokens_of;
  for (const std::string t : kTokenizers) {
    for (const int threads : thread_counts) {
      const std::string key = key_of(t, threads);
      // Same work on both sides, or the speeds mean nothing.
      for (const auto* runs : {&ours[key], &rust[key]})
        for (const auto& run : *runs) {
          const int64_t tokens = run["tokens"].get<int64_t>();
          if (!tokens_of.count(t)) tokens_of[t] = tokens;
          if (tokens != tokens_of[t])
            throw std::runtime_error(fmt::format(
                "tokenizer_json: {}: the sides disagree on the token count ({} vs {}): they do "
                "not encode the same way; run tests/parity/tokenizer_json_parity.py",
                key, tokens, tokens_of[t]));
        }
      // Per pair: wall time (the target's measure) and CPU time, which a busy shared machine
      // disturbs less (a thread waiting for a core adds wall time, not CPU time).
      std::vector<double> ratios, cpu_ratios;
      for (size_t i = 0; i < ours[key].size(); ++i) {
        ratios.push_back(rust[key][i]["seconds"].get<double>() /
                         ours[key][i]["seconds"].get<double>());
        cpu_ratios.push_back(rust[key][i]["cpu_seconds"].get<double>() /
                             ours[key][i]["cpu_seconds"].get<double>());
      }
      const json o = side_summary(ours[key]), ru = side_summary(rust[key]);
      const double ratio = median(ratios);
      speed_met = speed_met && ratio >= 1.0;
      const std::string short_key = threads == 1 ? "1_thread" : "all_threads";
      result.metrics[t][short_key] = {
          {"threads", threads},
          {"ours", o},
          {"rust", ru},
          {"tokens_per_s_ratio", ratio},
          {"tokens_per_s_ratio_min", *std::min_element(ratios.begin(), ratios.end())},
          {"tokens_per_s_ratio_max", *std::max_element(ratios.begin(), ratios.end())},
          {"cpu_seconds_ratio", median(cpu_ratios)},
          {"peak_rss_ratio", o["peak_rss_mb"].get<double>() / ru["peak_rss_mb"].get<double>()}};
      result.metrics[t + "_ratio_" + short_key] = ratio;
      const std::string what = fmt::format("{}, {} thread{}", t == "bpe" ? "BPE" : "WordPiece",
                                           threads, threads == 1 ? "" : "s");
      result.rows.push_back(
          {{what + ": tokens/s per thread", fmt_int(o["tokens_per_s_per_thread"].get<double>()),
            fmt_int(ru["tokens_per_s_per_thread"].get<double>()),
            fmt::format("{:.2f} ({:.2f}..{:.2f})", ratio,
                        *std::min_element(ratios.begin(), ratios.end()),
                        *std::max_element(ratios.begin(), ratios.end()))}});
      result.rows.push_back({{what + ": MB/s", fmt_2(o["mb_per_s"].get<double>()),
                              fmt_2(ru["mb_per_s"].get<double>()), "-"}});
      result.rows.push_back(
          {{what + ": CPU s / wall s (Rust CPU s / ours)", fmt_2(o["cpu_per_wall"].get<double>()),
            fmt_2(ru["cpu_per_wall"].get<double>()), fmt_2(median(cpu_ratios))}});
      result.rows.push_back(
          {{what + ": voluntary context switches", fmt_int(o["voluntary_switches"].get<double>()),
            fmt_int(ru["voluntary_switches"].get<double>()), "-"}});
      result.rows.push_back(
          {{what + ": peak RSS MB (at start)",
            fmt::format("{:.0f} ({:.0f})", o["peak_rss_mb"].get<double>(),
                        o["start_rss_mb"].get<double>()),
            fmt::format("{:.0f} ({:.0f})", ru["peak_rss_mb"].get<double>(),
                        ru["start_rss_mb"].get<double>()),
            fmt_2(o["peak_rss_mb"].get<double>() / ru["peak_rss_mb"].get<double>())}});
    }
    result.config[t + "_tokens"] = tokens_of[t];
  }
  result.config["text_bytes"] = ours.begin()->second.front()["bytes"];

  // One long word through the byte-level BPE: the cost must grow linearly with its length. Each
  // side runs as it is, then with malloc keeping freed memory (kMallocKeepsMemory), which takes
  // the kernel's page faults out of the cost per letter and leaves the algorithm and the caches.
  const std::vector<int64_t> sizes =
      options.quick ? std::vector<int64_t>{1000, 10000}
                    : std::vector<int64_t>{10000, 100000, kOneMillion, 4 * kOneMillion};
  const int repeats = options.quick ? 1 : 3;
  std::string size_list;
  for (const auto n : sizes) size_list += (size_list.empty() ? "" : ",") + std::to_string(n);
  const json word_job = {{"mode", "word"},
                         {"tokenizer", tokenizer_path("bpe")},
                         {"sizes", sizes},
                         {"repeats", repeats}};
  const std::vector<std::string> rust_word_args = {"word", tokenizer_path("bpe"), size_list,
                                                   std::to_string(repeats)};
  const std::map<std::string, json> words = {
      {"ours", run_ours(s, "ours_word", word_job)},
      {"rust", run_rust(s, "rust_word", rust_word_args, 1)},
      {"ours_memory_kept", run_ours(s, "ours_word_kept", word_job, {kMallocKeepsMemory})},
      {"rust_memory_kept", run_rust(s, "rust_word_kept", rust_word_args, 1, {kMallocKeepsMemory})}};
  for (const auto& [side, w] : words)
    if (w["tokens"] != words.at("ours")["tokens"])
      throw std::runtime_error("tokenizer_json: the long words' token counts differ: ours " +
                               words.at("ours")["tokens"].dump() + ", " + side + " " +
                               w["tokens"].dump());
  const auto growth = [&](const json& w) {  // per-letter cost, largest word / smallest
    const auto& sec = w["seconds"];
    return (sec.back().get<double>() / static_cast<double>(sizes.back())) /
           (sec.front().get<double>() / static_cast<double>(sizes.front()));
  };
  const auto one_million = std::find(sizes.begin(), sizes.end(), kOneMillion);
  const double million_seconds =
      one_million == sizes.end()
          ? 0.0
          : words.at("ours")["seconds"][one_million - sizes.begin()].get<double>();
  json word = {{"sizes", sizes}, {"repeats", repeats}, {"tokens", words.at("ours")["tokens"]}};
  for (const auto& [side, w] : words) {
    word[side + "_seconds"] = w["seconds"];
    word[side + "_per_char_cost_growth"] = growth(w);
  }
  result.metrics["word"] = word;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double o = words.at("ours")["seconds"][i].get<double>(),
                 ru = words.at("rust")["seconds"][i].get<double>();
    result.rows.push_back(
        {{fmt::format("BPE, one word of {} letters: seconds", sizes[i]), fmt::format("{:.4f}", o),
          fmt::format("{:.4f}", ru), fmt_2(ru / o) + "x faster"}});
  }
  result.rows.push_back({{"BPE word: per-letter cost, largest / smallest word",
                          fmt_2(growth(words.at("ours"))), fmt_2(growth(words.at("rust"))), "-"}});
  result.rows.push_back(
      {{"  the same, malloc keeping freed memory", fmt_2(growth(words.at("ours_memory_kept"))),
        fmt_2(growth(words.at("rust_memory_kept"))), "-"}});
  result.metrics["word_million_seconds"] = million_seconds;
  result.metrics["word_per_char_cost_growth"] = growth(words.at("ours"));
  result.metrics["word_per_char_cost_growth_memory_kept"] = growth(words.at("ours_memory_kept"));
  // A log factor alone would make the per-letter cost grow by log(4M)/log(10k) = 1.65 over the
  // sizes; quadratic work by 400.
  const double log_factor_growth =
      std::log(static_cast<double>(sizes.back())) / std::log(static_cast<double>(sizes.front()));
  result.metrics["word_log_factor_growth"] = log_factor_growth;

  // Where our time goes: the pipeline's steps timed apart, on 1 thread (shares of the time)
  // and on all threads (each step's thread-seconds against 1 thread's: a step that grows when
  // threads run at once waits for something they share).
  for (const std::string t : kTokenizers) {
    json one_thread;
    for (const int threads : thread_counts) {
      json stages = run_ours(s, fmt::format("ours_stages_{}_{}t", t, threads),
                             {{"mode", "stages"},
                              {"tokenizer", tokenizer_path(t)},
                              {"texts", texts},
                              {"threads", threads}});
      if (stages["tokens"].get<int64_t>() != tokens_of[t])
        throw std::runtime_error(
            fmt::format("tokenizer_json: the step-by-step {} pipeline made {} tokens, encode {}", t,
                        stages["tokens"].get<int64_t>(), tokens_of[t]));
      double thread_seconds = 0;
      for (const char* stage : kStageOrder)
        thread_seconds += stages["seconds"][stage].get<double>();
      json shares = json::object(), growth = json::object();
      std::string text;
      for (const char* stage : kStageOrder) {
        const double sec = stages["seconds"][stage].get<double>();
        shares[stage] = sec / thread_seconds;
        if (threads == 1) {
          text += fmt::format("{}{} {:.0f}%", text.empty() ? "" : ", ", stage,
                              100 * sec / thread_seconds);
        } else {
          growth[stage] = sec / one_thread["seconds"][stage].get<double>();
          text += fmt::format("{}{} {:.2f}x", text.empty() ? "" : ", ", stage,
                              growth[stage].get<double>());
        }
      }
      json entry = {{"threads", threads},
                    {"seconds", stages["seconds"]},
                    {"wall_seconds", stages["total_seconds"]},
                    {"thread_seconds", thread_seconds},
                    {"shares", shares}};
      if (threads == 1) {
        one_thread = entry;
      } else {
        entry["thread_seconds_vs_1_thread"] = growth;
        entry["total_vs_1_thread"] = thread_seconds / one_thread["thread_seconds"].get<double>();
      }
      result.metrics["stages"][t][threads == 1 ? "1_thread" : "all_threads"] = entry;
      result.rows.push_back(
          {{threads == 1
                ? fmt::format("{} 1 thread, our time by step ({:.2f} s)",
                              t == "bpe" ? "BPE" : "WordPiece", thread_seconds)
                : fmt::format("{} {} threads, our thread-seconds by step vs 1 thread ({:.2f}x)",
                              t == "bpe" ? "BPE" : "WordPiece", threads,
                              thread_seconds / one_thread["thread_seconds"].get<double>()),
            text, "-", "-"}});
    }
  }

  const bool word_met = !options.quick && million_seconds < 1.0 &&
                        growth(words.at("ours_memory_kept")) < log_factor_growth;
  result.metrics["speed_target_met"] = speed_met;
  result.metrics["word_target_met"] = word_met;
  result.config["targets"] = {
      {"speed", "ours / Rust tokens/s per thread >= 1.0 for BPE and WordPiece, 1 and all threads"},
      {"word",
       "a 1,000,000-letter word through our BPE in well under 1 s; cost linear in length: from "
       "10k to 4M letters, with malloc keeping freed memory, the cost per letter grows less "
       "than a log factor alone would make it (log(4M)/log(10k))"}};
  result.config["load_average_before"] = load_before;
  result.config["load_average_after"] = load_average();
  std::error_code ignored;
  fs::remove_all(s.workdir, ignored);
  return result;
}

}  // namespace

Scenario tokenizer_json_scenario() {
  return {"tokenizer_json",
          "tokenizer.json pipeline vs HF's Rust tokenizers: BPE and WordPiece batch speed, "
          "peak RSS, a 1 MB word",
          run_tokenizer_json};
}

}  // namespace ctrainer::bench
