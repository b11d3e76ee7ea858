// Scenario tokenizer: BERT WordPiece tokenization of the SST-2 train sentences (67,349, run_glue's
// preprocessing: [CLS] text [SEP], truncation to 128) through glue::tokenize_split, on one
// thread and on every hardware thread. metrics.mb_per_second_1_thread is the headline (target
// >= 5 MB/s of text); metrics.scaling = all-threads speed / one-thread speed (target: close to
// the thread count).
#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include <ctrainer/examples/glue/glue_features.h>
#include <ctrainer/examples/glue/glue_reader.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>

#include "bench_report.h"

namespace ctrainer::bench {
namespace {

using Clock = std::chrono::steady_clock;
const std::string kData = CTRAINER_EXAMPLES_DATA_DIR;

BenchResult run_tokenizer(const BenchOptions& options) {
  const auto& task = glue::glue_task("sst2");
  glue::GlueSplit split = glue::read_glue_split(task, kData + "/glue/SST-2", "train");
  if (options.quick) split.examples.resize(2000);
  double text_bytes = 0;
  for (const auto& ex : split.examples)
    text_bytes += static_cast<double>(ex.text_a.size() + (ex.text_b ? ex.text_b->size() : 0));
  const auto tokenizer =
      BertTokenizer::from_vocab_file(kData + "/vocab/bert-base-uncased-vocab.txt");
  const int64_t all_threads = std::max(1u, std::thread::hardware_concurrency());

  BenchResult result;
  result.scenario = "tokenizer";
  result.header = {"threads", "sentences/s", "MB/s (text)", "seconds (median)", "speedup"};
  result.config = {{"data", "SST-2 train.tsv (GLUE)"},
                   {"sentences", split.size()},
                   {"text_megabytes", text_bytes / 1e6},
                   {"vocab", "bert-base-uncased"},
                   {"max_seq_length", 128},
                   {"padding", "none"},
                   {"rounds", options.rounds},
                   {"hardware_threads", all_threads}};
  std::vector<int64_t> thread_counts{1};
  if (all_threads > 1) thread_counts.push_back(all_threads);
  double one_thread_mbps = 0;
  int64_t tokens = 0;
  for (int64_t threads : thread_counts) {
    glue::TokenizeOptions opts{.max_seq_length = 128, .num_threads = threads};
    tokens = glue::tokenize_split(split, tokenizer, opts)->data().num_tokens();  // warm-up
    std::vector<double> seconds;
    for (int64_t r = 0; r < options.rounds; ++r) {
      const auto start = Clock::now();
      auto ds = glue::tokenize_split(split, tokenizer, opts);
      seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    const double s = median(seconds);
    const double mbps = text_bytes / 1e6 / s;
    const double sps = static_cast<double>(split.size()) / s;
    if (threads == 1) one_thread_mbps = mbps;
    const std::string key = threads == 1 ? "1_thread" : "all_threads";
    result.metrics[key] = {{"threads", threads},
                           {"seconds", s},
                           {"sentences_per_second", sps},
                           {"mb_per_second", mbps},
                           {"speedup", mbps / one_thread_mbps}};
    result.rows.push_back(
        {{std::to_string(threads), fmt::format("{:.0f}", sps), fmt::format("{:.2f}", mbps),
          fmt::format("{:.3f}", s), fmt::format("{:.2f}", mbps / one_thread_mbps)}});
  }
  result.config["tokens"] = tokens;
  result.metrics["mb_per_second_1_thread"] = one_thread_mbps;
  result.metrics["scaling"] = result.metrics.contains("all_threads")
                                  ? result.metrics["all_threads"]["speedup"].get<double>()
                                  : 1.0;
  return result;
}

}  // namespace

Scenario tokenizer_scenario() {
  return {"tokenizer", "BERT WordPiece tokenization of SST-2 train: 1 thread vs all threads",
          run_tokenizer};
}

}  // namespace ctrainer::bench
