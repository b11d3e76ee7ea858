#include <ctrainer/examples/glue/glue_dataset.h>

#include <filesystem>

#include <ctrainer/examples/glue/glue_reader.h>
#include <ctrainer/trainer/data/text/content_hash.h>
#include <ctrainer/trainer/data/text/tokenized_cache.h>
#include <ctrainer/trainer/logging.h>

namespace ctrainer::glue {

uint64_t vocab_hash(const Vocab& vocab) {
  ContentHasher hasher;
  for (int64_t id = 0; id < vocab.size(); ++id) hasher.update_field(vocab.token(id));
  return hasher.digest();
}

nlohmann::json glue_cache_key(const GlueTask& task, const std::string& split,
                              const std::string& tsv_path, const BertTokenizer& tokenizer,
                              const TokenizeOptions& options) {
  const BertTokenizerOptions& tok = tokenizer.options();
  std::error_code ec;
  const auto tsv_bytes = std::filesystem::file_size(tsv_path, ec);
  return {
      {"format_version", kTokenizedCacheVersion},
      {"task", task.name},
      {"split", split},
      {"labeled", task.split_has_labels(split)},
      {"tsv_hash", to_hex(hash_file(tsv_path))},
      {"tsv_bytes", ec ? -1 : static_cast<int64_t>(tsv_bytes)},
      {"vocab_hash", to_hex(vocab_hash(tokenizer.vocab()))},
      {"vocab_size", tokenizer.vocab_size()},
      {"tokenizer_revision", kBertTokenizerRevision},
      {"do_lower_case", tok.do_lower_case},
      {"strip_accents", tok.strip_accents ? nlohmann::json(*tok.strip_accents) : nullptr},
      {"tokenize_chinese_chars", tok.tokenize_chinese_chars},
      {"never_split", tok.never_split},
      {"max_seq_length", options.max_seq_length},
      {"pad_to_max_length", options.pad_to_max_length},
      {"truncation", "longest_first"},
      {"add_special_tokens", true},
  };
}

GlueDataset load_glue_dataset(const GlueTask& task, const std::string& task_dir,
                              const std::string& split, const BertTokenizer& tokenizer,
                              const TokenizeOptions& options,
                              const std::optional<std::string>& cache_dir) {
  return load_glue_dataset_file(task, glue_split_path(task_dir, split), split, tokenizer, options,
                                cache_dir);
}

GlueDataset load_glue_dataset_file(const GlueTask& task, const std::string& tsv_path,
                                   const std::string& split, const BertTokenizer& tokenizer,
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
