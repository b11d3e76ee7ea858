#pragma once
/// \file Our side of `ctrainer-bench tokenizer_json`: the work one worker process does with a
/// tokenizer.json loaded by PipelineTokenizer::from_file. The scenario starts ctrainer-bench
/// again with CTRAINER_BENCH_TOKENIZER_JSON_WORKER set to a job (JSON); the worker prints its
/// result as one JSON line and exits, so that each side's peak RSS is its own process's.
#include <string>

#include <nlohmann/json.hpp>

namespace ctrainer::bench::tokenizer_json {

/// The variable whose presence makes a ctrainer-bench process a worker; its value is the job.
inline constexpr const char* kWorkerEnv = "CTRAINER_BENCH_TOKENIZER_JSON_WORKER";

/// Runs one job and returns its result. Jobs ({"mode", "tokenizer", ...}):
/// - "encode" {"texts": JSONL path, "threads": N}: encodes every line (["a"] or ["a", "b"], with
///   special tokens) once as a warm-up and once timed, the lines split into N contiguous chunks
///   of one std::thread each; every encoding is kept until the end, as encode_batch returns
///   them. Result: {seconds, cpu_seconds, voluntary_switches (of the timed pass: waits for a
///   lock), tokens, texts, bytes, threads, start_rss_mb (VmRSS before any work), peak_rss_mb
///   (VmHWM at the end)}.
/// - "word" {"sizes": [N...], "repeats": R}: one word of N ASCII letters per size, encoded R
///   times; {sizes, seconds (median per size), tokens}.
/// - "stages" {"texts": path, "threads": N}: "encode"'s work (warm-up, then timed) with the
///   pipeline's steps run one by one from the public components and timed apart (UTF-8 check,
///   added-token split, normalizer, pre-tokenizer, model, tokens -> encoding, post-processor);
///   {seconds: {step: thread-seconds}, total_seconds (wall), tokens, threads}. Its tokens must
///   equal "encode"'s, which the scenario checks.
/// Throws std::runtime_error (naming the file) on unreadable input.
nlohmann::json run_worker_job(const nlohmann::json& job);

/// A size field of /proc/self/status ("VmRSS": resident now, "VmHWM": the peak since exec) in
/// MB; -1 when missing. VmHWM rather than the parent's wait4 ru_maxrss: Linux's exec keeps
/// the high-water mark of the memory it replaces, so a child started by posix_spawn (vfork +
/// exec) reports at least its parent's peak RSS in ru_maxrss.
double status_mb(const std::string& field);

}  // namespace ctrainer::bench::tokenizer_json
