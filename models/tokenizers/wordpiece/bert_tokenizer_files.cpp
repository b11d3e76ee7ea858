// BertTokenizer's side of the Tokenizer interface: loading and saving transformers' files, the
// special tokens and the fingerprint that keys caches of tokenized data.
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>

#include <filesystem>
#include <fstream>

#include <ctrainer/core/content_hash.h>
#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>

namespace ctrainer {

namespace {
namespace fs = std::filesystem;

/// Reads an optional key of tokenizer_config.json with the type HF gives it.
template <class T>
void read_option(const nlohmann::json& config, const char* key, const fs::path& file, T& out) {
  if (!config.contains(key) || config.at(key).is_null()) return;
  try {
    out = config.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw ArgumentError(file.string() + " is not a valid tokenizer_config.json (" + e.what() +
                        "); fix it or pass --do_lower_case true|false");
  }
}

}  // namespace

BertTokenizer BertTokenizer::from_pretrained(const std::string& path,
                                             std::optional<bool> do_lower_case) {
  const fs::path given(path);
  const fs::path vocab = fs::is_directory(given) ? given / "vocab.txt" : given;
  if (!fs::is_regular_file(vocab))
    throw ArgumentError(vocab.string() + " does not exist: a BERT tokenizer needs vocab.txt " +
                        "(one WordPiece token per line)");
  BertTokenizerOptions options;
  // As run_glue always did: the file is only consulted when the caller leaves the case to it.
  const fs::path config_file = vocab.parent_path() / "tokenizer_config.json";
  if (!do_lower_case && fs::is_regular_file(config_file)) {
    nlohmann::json config;
    try {
      std::ifstream in(config_file);
      config = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      throw ArgumentError(config_file.string() + " is not a valid tokenizer_config.json (" +
                          e.what() + "); fix it or pass --do_lower_case true|false");
    }
    if (config.is_object()) {
      read_option(config, "do_lower_case", config_file, options.do_lower_case);
      bool strip = false;
      if (config.contains("strip_accents") && !config.at("strip_accents").is_null()) {
        read_option(config, "strip_accents", config_file, strip);
        options.strip_accents = strip;
      }
      read_option(config, "tokenize_chinese_chars", config_file, options.tokenize_chinese_chars);
    }
  }
  if (do_lower_case) options.do_lower_case = *do_lower_case;
  return from_vocab_file(vocab.string(), std::move(options));
}

std::optional<int64_t> BertTokenizer::token_to_id(std::string_view token) const {
  return vocab_->find(token);
}

std::string BertTokenizer::id_to_token(int64_t id) const {
  return vocab_->token(id);
}

SpecialTokens BertTokenizer::special_tokens() const {
  SpecialTokens tokens;
  tokens.pad = "[PAD]";
  tokens.unk = "[UNK]";
  tokens.cls = "[CLS]";
  tokens.sep = "[SEP]";
  tokens.mask = "[MASK]";
  return tokens;
}

void BertTokenizer::save_pretrained(const std::string& dir) const {
  const fs::path out(dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  const fs::path vocab_file = out / "vocab.txt";
  const fs::path temporary = out / "vocab.txt.tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    for (int64_t id = 0; id < vocab_->size(); ++id) file << vocab_->token(id) << '\n';
    file.flush();
    if (!file) throw std::runtime_error("could not write " + temporary.string());
  }
  fs::rename(temporary, vocab_file);
  const BertTokenizerOptions& o = options();
  nlohmann::json config = {{"tokenizer_class", tokenizer_class()},
                           {"do_lower_case", o.do_lower_case},
                           {"model_max_length", 512},
                           {"unk_token", "[UNK]"},
                           {"sep_token", "[SEP]"},
                           {"pad_token", "[PAD]"},
                           {"cls_token", "[CLS]"},
                           {"mask_token", "[MASK]"}};
  if (o.strip_accents) config["strip_accents"] = *o.strip_accents;
  if (!o.tokenize_chinese_chars) config["tokenize_chinese_chars"] = false;
  write_json_file(out / "tokenizer_config.json", config);
}

nlohmann::json BertTokenizer::fingerprint() const {
  ContentHasher hasher;
  for (int64_t id = 0; id < vocab_->size(); ++id) hasher.update_field(vocab_->token(id));
  const BertTokenizerOptions& o = options();
  return {
      {"vocab_hash", to_hex(hasher.digest())},
      {"vocab_size", vocab_size()},
      {"tokenizer_revision", kBertTokenizerRevision},
      {"do_lower_case", o.do_lower_case},
      {"strip_accents", o.strip_accents ? nlohmann::json(*o.strip_accents) : nullptr},
      {"tokenize_chinese_chars", o.tokenize_chinese_chars},
      {"never_split", o.never_split},
  };
}

}  // namespace ctrainer
