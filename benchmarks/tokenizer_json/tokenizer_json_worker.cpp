#include "tokenizer_json/tokenizer_json_worker.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <ctrainer/models/tokenizers/pipeline/pipeline_tokenizer.h>
#include <ctrainer/models/tokenizers/unicode.h>

#include "bench_report.h"

namespace ctrainer::bench::tokenizer_json {
namespace {

using Clock = std::chrono::steady_clock;
using tokenizers::PipelineTokenizer;
using tokenizers::TokenEncoding;

struct Row {
  std::string a;
  std::optional<std::string> b;
};

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

/// Times a thread of this process gave up its core before its time slice ended: waiting for
/// a lock (futex) or I/O. A lock that threads fight over shows here.
int64_t voluntary_switches() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nvcsw;
}

std::vector<Row> read_rows(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("tokenizer_json worker: cannot read " + path);
  std::vector<Row> rows;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_array() || j.empty() || j.size() > 2)
      throw std::runtime_error("tokenizer_json worker: " + path + ":" + std::to_string(number) +
                               ": expected [\"text\"] or [\"text\", \"pair\"]");
    Row row{j[0].get<std::string>(), std::nullopt};
    if (j.size() == 2) row.b = j[1].get<std::string>();
    rows.push_back(std::move(row));
  }
  return rows;
}

size_t row_bytes(const Row& row) {
  return row.a.size() + (row.b ? row.b->size() : 0);
}

/// Where `threads` contiguous chunks of about equal bytes start (and the last ends). Equal
/// bytes rather than equal counts: the MRPC pairs at the end are 4x longer than the SST-2
/// sentences, and a static split by count would leave one thread idle while the Rust library's
/// work stealing balances the same texts.
std::vector<size_t> chunk_bounds(const std::vector<Row>& rows, int threads) {
  size_t total = 0;
  for (const auto& row : rows) total += row_bytes(row);
  std::vector<size_t> bounds{0};
  size_t seen = 0;
  for (size_t i = 0; i < rows.size() && bounds.size() < static_cast<size_t>(threads); ++i) {
    seen += row_bytes(rows[i]);
    if (seen * threads >= total * bounds.size()) bounds.push_back(i + 1);
  }
  while (bounds.size() <= static_cast<size_t>(threads)) bounds.push_back(rows.size());
  return bounds;
}

/// Runs work(thread, first row, end row) on one std::thread per chunk; rethrows the first error.
void run_chunks(const std::vector<Row>& rows, int threads,
                const std::function<void(int, size_t, size_t)>& work) {
  const auto bounds = chunk_bounds(rows, threads);
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        work(t, bounds[t], bounds[t + 1]);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  for (auto& thread : pool) thread.join();
  for (const auto& error : errors)
    if (error) std::rethrow_exception(error);
}

/// Every row encoded (kept, as encode_batch returns them all), on `threads` threads.
std::vector<TokenEncoding> encode_all(const PipelineTokenizer& tok, const std::vector<Row>& rows,
                                      int threads) {
  std::vector<TokenEncoding> out(rows.size());
  run_chunks(rows, threads, [&](int, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      out[i] = tok.encode(rows[i].a, rows[i].b ? &*rows[i].b : nullptr, true);
  });
  return out;
}

int64_t count_tokens(const std::vector<TokenEncoding>& encodings) {
  int64_t tokens = 0;
  for (const auto& e : encodings) tokens += static_cast<int64_t>(e.size());
  return tokens;
}

nlohmann::json encode_job(const nlohmann::json& job, double start_rss_mb) {
  const auto tok = PipelineTokenizer::from_file(job.at("tokenizer").get<std::string>());
  const auto rows = read_rows(job.at("texts").get<std::string>());
  const int threads = std::max(1, job.at("threads").get<int>());
  size_t bytes = 0;
  for (const auto& row : rows) bytes += row_bytes(row);
  encode_all(*tok, rows, threads);  // warm-up, as the Rust side's
  const double cpu0 = cpu_seconds();
  const int64_t switches0 = voluntary_switches();
  const auto start = Clock::now();
  const auto encodings = encode_all(*tok, rows, threads);
  const double seconds = since(start), cpu = cpu_seconds() - cpu0;
  const int64_t switches = voluntary_switches() - switches0;
  return {{"seconds", seconds},
          {"cpu_seconds", cpu},
          {"voluntary_switches", switches},
          {"tokens", count_tokens(encodings)},
          {"texts", rows.size()},
          {"bytes", bytes},
          {"threads", threads},
          {"start_rss_mb", start_rss_mb},
          {"peak_rss_mb", status_mb("VmHWM")}};
}

nlohmann::json word_job(const nlohmann::json& job) {
  const auto tok = PipelineTokenizer::from_file(job.at("tokenizer").get<std::string>());
  const int repeats = std::max(1, job.at("repeats").get<int>());
  std::string pattern;
  for (int i = 0; i < 100; ++i) pattern += "abcdefghij";
  tok->encode(pattern, nullptr, true);  // warm-up
  nlohmann::json out = {{"sizes", nlohmann::json::array()},
                        {"seconds", nlohmann::json::array()},
                        {"tokens", nlohmann::json::array()}};
  for (const size_t n : job.at("sizes").get<std::vector<size_t>>()) {
    std::string word;
    word.reserve(n);
    while (word.size() < n) word += "abcdefghij";
    word.resize(n);
    std::vector<double> times;
    size_t tokens = 0;
    for (int r = 0; r < repeats; ++r) {
      const auto start = Clock::now();
      tokens = tok->encode(word, nullptr, true).size();
      times.push_back(since(start));
    }
    out["sizes"].push_back(n);
    out["seconds"].push_back(median(times));
    out["tokens"].push_back(tokens);
  }
  return out;
}

/// PipelineTokenizer::encode spelled out with the public components, a clock between steps.
/// extract_and_normalize is called without the normalizer and the normalizer applied after it:
/// the same result for files whose added tokens are all unnormalized (both of the bench's; the
/// scenario checks the token counts), and it times the two steps apart.
nlohmann::json stages_job(const nlohmann::json& job) {
  using namespace tokenizers;
  const std::string path = job.at("tokenizer").get<std::string>();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("tokenizer_json worker: cannot read " + path);
  const auto j = nlohmann::json::parse(in);
  static const nlohmann::json null_value;
  const auto field = [&](const char* key) -> const nlohmann::json& {
    return j.contains(key) ? j.at(key) : null_value;
  };
  const auto normalizer = normalizer_from_json(field("normalizer"), "normalizer");
  const auto pre_tokenizer = pre_tokenizer_from_json(field("pre_tokenizer"), "pre_tokenizer");
  const auto model = token_model_from_json(field("model"), "model");
  const auto post = post_processor_from_json(field("post_processor"), "post_processor");
  const AddedVocabulary added(field("added_tokens"), "added_tokens", normalizer);
  const auto rows = read_rows(job.at("texts").get<std::string>());
  const int threads = std::max(1, job.value("threads", 1));

  enum { kUtf8, kAdded, kNormalize, kPreTokenize, kModel, kAssemble, kPost, kStages };
  static const char* const kNames[kStages] = {
      "utf8_check", "added_tokens", "normalizer", "pre_tokenizer", "model",
      "tokens_to_encoding", "post_processor"};
  // Per thread and stage: wall time inside the step, which includes waiting for a lock.
  std::vector<std::vector<double>> seconds;
  const auto single = [&](std::vector<double>& sec, const std::string& text, int64_t type_id) {
    auto t = Clock::now();
    const auto lap = [&](int stage) {
      const auto now = Clock::now();
      sec[stage] += std::chrono::duration<double>(now - t).count();
      t = now;
    };
    if (unicode::first_invalid_utf8(text)) throw std::runtime_error("invalid UTF-8 in " + path);
    lap(kUtf8);
    PreTokenizedString pieces = added.extract_and_normalize(text, nullptr);
    lap(kAdded);
    if (normalizer) pieces.normalize([&](NormalizedString& s) { normalizer->normalize(s); });
    lap(kNormalize);
    if (pre_tokenizer) pre_tokenizer->pre_tokenize(pieces);
    lap(kPreTokenize);
    pieces.tokenize([&](const std::string& word) { return model->tokenize(word); });
    lap(kModel);
    TokenEncoding encoding = TokenEncoding::from_tokens(pieces.into_tokens(), type_id);
    lap(kAssemble);
    return encoding;
  };
  std::vector<TokenEncoding> out(rows.size());
  const auto pass = [&] {
    seconds.assign(threads, std::vector<double>(kStages, 0.0));
    run_chunks(rows, threads, [&](int thread, size_t begin, size_t end) {
      auto& sec = seconds[thread];
      for (size_t i = begin; i < end; ++i) {
        std::vector<TokenEncoding> parts{single(sec, rows[i].a, 0)};
        if (rows[i].b) parts.push_back(single(sec, *rows[i].b, 1));
        const auto t = Clock::now();
        if (post) parts = post->process(std::move(parts), true);
        TokenEncoding merged;
        for (const auto& part : parts) merged.append(part);
        out[i] = std::move(merged);
        sec[kPost] += since(t);
      }
    });
  };
  pass();  // warm-up: the BPE model's cache filled, as in "encode"'s timed pass
  const auto start = Clock::now();
  pass();
  const double total = since(start);
  const int64_t tokens = count_tokens(out);
  // Summed over the threads: thread-seconds per step.
  nlohmann::json by_stage = nlohmann::json::object();
  for (int s = 0; s < kStages; ++s) {
    double sum = 0;
    for (const auto& per_thread : seconds) sum += per_thread[s];
    by_stage[kNames[s]] = sum;
  }
  return {{"seconds", by_stage}, {"total_seconds", total}, {"tokens", tokens}, {"threads", threads}};
}

}  // namespace

double status_mb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == field + ":") {
      double kb = 0;
      in >> kb;
      return kb / 1024.0;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

nlohmann::json run_worker_job(const nlohmann::json& job) {
  const double start_rss_mb = status_mb("VmRSS");
  const std::string mode = job.at("mode").get<std::string>();
  if (mode == "encode") return encode_job(job, start_rss_mb);
  if (mode == "word") return word_job(job);
  if (mode == "stages") return stages_job(job);
  throw std::runtime_error("tokenizer_json worker: unknown mode '" + mode + "'");
}

}  // namespace ctrainer::bench::tokenizer_json
