#include <ctrainer/models/tokenizers/tokenizer_registry.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>
#include <ctrainer/models/tokenizers/pipeline/pretrained_tokenizer_fast.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>

namespace ctrainer {

namespace {
namespace fs = std::filesystem;

std::string without_fast(const std::string& name) {
  return name.ends_with("Fast") ? name.substr(0, name.size() - 4) : name;
}

/// The tokenizers built into the library: the one list a new tokenizer joins.
void register_builtin_tokenizers(TokenizerRegistry& registry) {
  const TokenizerFactory wordpiece = [](const std::string& path,
                                        const AutoTokenizerOptions& options) {
    return std::make_shared<BertTokenizer>(
        BertTokenizer::from_pretrained(path, options.do_lower_case));
  };
  // transformers' WordPiece tokenizers that read vocab.txt + tokenizer_config.json alike.
  for (const char* name : {"BertTokenizer", "DistilBertTokenizer", "ElectraTokenizer"})
    registry.add(name, wordpiece);
}

/// tokenizer_config.json's tokenizer_class, or nothing.
std::optional<std::string> configured_class(const fs::path& config_file) {
  if (!fs::is_regular_file(config_file)) return std::nullopt;
  std::ifstream in(config_file);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw ArgumentError(config_file.string() + " is not a valid tokenizer_config.json (" +
                        e.what() + "); fix it or pass --do_lower_case true|false");
  }
  if (!config.is_object() || !config.contains("tokenizer_class") ||
      config.at("tokenizer_class").is_null())
    return std::nullopt;
  if (!config.at("tokenizer_class").is_string())
    throw ArgumentError(config_file.string() + ": 'tokenizer_class' must be a string such as " +
                        "\"BertTokenizer\"");
  return config.at("tokenizer_class").get<std::string>();
}

}  // namespace

TokenizerRegistry& TokenizerRegistry::global() {
  static TokenizerRegistry* registry = [] {
    auto* r = new TokenizerRegistry();  // never destroyed: tokenizers may be made during exit
    register_builtin_tokenizers(*r);
    return r;
  }();
  return *registry;
}

void TokenizerRegistry::add(const std::string& tokenizer_class, TokenizerFactory factory) {
  const std::string name = without_fast(tokenizer_class);
  std::lock_guard lock(mutex_);
  for (const auto& [known, _] : entries_)
    if (known == name)
      throw std::invalid_argument("TokenizerRegistry::add: " + name + " is registered already");
  entries_.emplace_back(name, std::move(factory));
}

const TokenizerFactory* TokenizerRegistry::find(const std::string& tokenizer_class) const {
  const std::string name = without_fast(tokenizer_class);
  std::lock_guard lock(mutex_);
  for (const auto& [known, factory] : entries_)
    if (known == name) return &factory;
  return nullptr;
}

std::vector<std::string> TokenizerRegistry::classes() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, _] : entries_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

std::shared_ptr<Tokenizer> AutoTokenizer::from_pretrained(const std::string& path,
                                                          const AutoTokenizerOptions& options) {
  const TokenizerRegistry& registry = TokenizerRegistry::global();
  const fs::path given(path);
  const fs::path folder = fs::is_directory(given) ? given : given.parent_path();
  // As transformers: a tokenizer.json (the folder's, or the file named) decides, whatever the
  // class; its normalizer says whether text is lowercased.
  const bool json_file = !fs::is_directory(given) && given.extension() == ".json" &&
                         given.filename() != "tokenizer_config.json";
  const bool bpe_files = fs::is_directory(given) && fs::is_regular_file(folder / "vocab.json") &&
                         fs::is_regular_file(folder / "merges.txt");
  // A SentencePiece model without a tokenizer.json: transformers builds the pipeline from it
  // (tokenizer.model for every class, spiece.model for T5).
  const auto configured =
      fs::is_directory(given) ? configured_class(folder / "tokenizer_config.json") : std::nullopt;
  const bool sentencepiece_file =
      fs::is_directory(given) &&
      (fs::is_regular_file(folder / "tokenizer.model") ||
       (fs::is_regular_file(folder / "spiece.model") && configured &&
        (*configured == "T5Tokenizer" || *configured == "T5TokenizerFast")));
  if (json_file || fs::is_regular_file(folder / "tokenizer.json") || bpe_files ||
      sentencepiece_file) {
    if (options.do_lower_case)
      throw ArgumentError(path + " has a tokenizer.json, whose normalizer decides the casing: " +
                          "drop --do_lower_case (it applies to vocab.txt tokenizers)");
    // vocab.json + merges.txt: the byte-level BPE transformers builds from them (GPT-2, RoBERTa);
    // a SentencePiece model: what transformers builds for its class.
    return PreTrainedTokenizerFast::from_pretrained(json_file ? path : folder.string());
  }
  if (auto name = configured_class(folder / "tokenizer_config.json")) {
    if (const TokenizerFactory* factory = registry.find(*name)) return (*factory)(path, options);
    throw ArgumentError((folder / "tokenizer_config.json").string() + ": tokenizer_class " + *name +
                        " is not one this build reads without a tokenizer.json (it reads " +
                        join(registry.classes()) + ", and any class from tokenizer.json, " +
                        "vocab.json + merges.txt or a SentencePiece tokenizer.model)");
  }
  const fs::path vocab = fs::is_directory(given) ? given / "vocab.txt" : given;
  if (fs::is_regular_file(vocab) || !fs::is_directory(given))
    return (*registry.find("BertTokenizer"))(path, options);
  throw ArgumentError(path + " holds no tokenizer this build reads: expected tokenizer.json, " +
                      "vocab.json + merges.txt (byte-level BPE), a SentencePiece tokenizer.model " +
                      "(spiece.model for T5), vocab.txt (WordPiece) or a " +
                      "tokenizer_config.json naming one of " + join(registry.classes()));
}

}  // namespace ctrainer
