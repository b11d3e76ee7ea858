#include <ctrainer/examples/glue/glue_dataset.h>

#include <filesystem>

#include <ctrainer/core/content_hash.h>
#include <ctrainer/examples/glue/glue_reader.h>
#include <ctrainer/trainer/data/text/tokenized_cache.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer::glue {

nlohmann::json glue_cache_key(const GlueTask& task, const std::string& split,
                              const std::string& tsv_path, const Tokenizer& tokenizer,
                              const TokenizeOptions& options) {
  std::error_code ec;
  const auto tsv_bytes = std::filesystem::file_size(tsv_path, ec);
  nlohmann::json key = {
      {"format_version", kTokenizedCacheVersion},
      {"task", task.name},
      {"split", split},
      {"labeled", task.split_has_labels(split)},
      {"tsv_hash", to_hex(hash_file(tsv_path))},
      {"tsv_bytes", ec ? -1 : static_cast<int64_t>(tsv_bytes)},
      {"max_seq_length", options.max_seq_length},
      {"pad_to_max_length", options.pad_to_max_length},
      {"truncation", "longest_first"},
      {"add_special_tokens", true},
  };
  // The tokenizer's own part (for WordPiece the same keys as before it had an interface, so
  // caches written then are still found).
  key.update(tokenizer.fingerprint());
  return key;
}

GlueDataset load_glue_dataset(const GlueTask& task, const std::string& task_dir,
                              const std::string& split, const Tokenizer& tokenizer,
                              const TokenizeOptions& options,
                              const std::optional<std::string>& cache_dir) {
  return load_glue_dataset_file(task, glue_split_path(task_dir, split), split, tokenizer, options,
                                cache_dir);
}

GlueDataset load_glue_dataset_file(const GlueTask& task, const std::string& tsv_path,
                                   const std::string& split, const Tokenizer& tokenizer,
                                   const TokenizeOptions& options,
                                   const std::optional<std::string>& cache_dir, bool rebuild) {
  GlueDataset out;
  out.source = tsv_path;
  nlohmann::json key;
  if (cache_dir) {
    key = glue_cache_key(task, split, out.source, tokenizer, options);
    const std::string name =
        task.name + "-" + split + "-" + ContentHasher().update(key.dump()).hex() + ".bin";
    out.cache_file = (std::filesystem::path(*cache_dir) / name).string();
    TokenizedCacheLoad cached;
    if (!rebuild) cached = load_tokenized_cache(out.cache_file, key);
    if (cached.data) {
      out.dataset = std::make_shared<TokenizedDataset>(std::move(*cached.data));
      out.from_cache = true;
      logging::logger()->info("Loaded the tokenized {} {} split from the cache {}", task.name,
                              split, out.cache_file);
      return out;
    }
    if (!cached.problem.empty())
      logging::logger()->warn("ignoring the tokenization cache file {}: {}; tokenizing again",
                              out.cache_file, cached.problem);
  }
  const GlueSplit examples = read_glue_tsv(task, out.source, split);
  out.dataset = tokenize_split(examples, tokenizer, options);
  if (cache_dir) {
    try {
      save_tokenized_cache(out.cache_file, key, out.dataset->data());
    } catch (const std::exception& e) {
      logging::logger()->warn("could not write the tokenization cache: {}", e.what());
    }
  }
  return out;
}

}  // namespace ctrainer::glue
