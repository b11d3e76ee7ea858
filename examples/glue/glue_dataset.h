#pragma once
/// \file A tokenized GLUE split, read from the task's TSV and tokenized once: later runs load it
/// from an on-disk cache keyed by everything that determines the result.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/examples/glue/glue_features.h>
#include <ctrainer/examples/glue/glue_task.h>
#include <ctrainer/models/tokenizers/tokenizer.h>
#include <ctrainer/trainer/data/text/tokenized_dataset.h>

namespace ctrainer::glue {

/// A tokenized split and where it came from.
struct GlueDataset {
  std::shared_ptr<TokenizedDataset> dataset;
  /// The TSV file of the split.
  std::string source;
  /// True when the tokens came from the cache (the TSV was hashed, not parsed or tokenized).
  bool from_cache = false;
  /// The cache file used or written (empty without a cache directory).
  std::string cache_file;
};

/// The cache key of a split: cache format version, task, split, the TSV's content hash and
/// size, the tokenizer's fingerprint (for WordPiece: the vocabulary's hash and size, revision,
/// do_lower_case, strip_accents, tokenize_chinese_chars, never_split) and the encoding
/// (max_seq_length, padding, truncation). Thread count is not part of it: it does not change the
/// result.
nlohmann::json glue_cache_key(const GlueTask& task, const std::string& split,
                              const std::string& tsv_path, const Tokenizer& tokenizer,
                              const TokenizeOptions& options);

/// Split `split` of `task` from `<task_dir>/<split>.tsv`, tokenized with `tokenizer`. With a
/// `cache_dir`, loads `<cache_dir>/<task>-<split>-<key hash>.bin` when it matches the key, and
/// otherwise tokenizes and writes it (a corrupt or mismatching file is reported as a warning
/// and rebuilt; a cache that cannot be written is a warning, never an error). Read and tokenize
/// errors are ArgumentErrors naming file:line (see read_glue_tsv, tokenize_split).
GlueDataset load_glue_dataset(const GlueTask& task, const std::string& task_dir,
                              const std::string& split, const Tokenizer& tokenizer,
                              const TokenizeOptions& options,
                              const std::optional<std::string>& cache_dir = std::nullopt);

/// Like load_glue_dataset, for a TSV at any path (run_glue's --train_file, ...) read as split
/// `split` of `task` (which decides the columns and whether it has labels). `rebuild` ignores an
/// existing cache file and writes a fresh one (run_glue's --overwrite_cache).
GlueDataset load_glue_dataset_file(const GlueTask& task, const std::string& tsv_path,
                                   const std::string& split, const Tokenizer& tokenizer,
                                   const TokenizeOptions& options,
                                   const std::optional<std::string>& cache_dir = std::nullopt,
                                   bool rebuild = false);

}  // namespace ctrainer::glue
