#include <ctrainer/models/tokenizers/pipeline/bpe_vocab_files.h>

#include <fstream>
#include <sstream>
#include <string>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer::tokenizers {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool option(const json& config, const char* key, bool fallback) {
  const auto it = config.find(key);
  return it != config.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

/// A special token of the config (a string or an AddedToken object), else `fallback`.
std::string token_name(const json& config, const char* key, const char* fallback) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && it->at("content").is_string())
    return it->at("content").get<std::string>();
  return fallback;
}

json read_merges(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ArgumentError("cannot read " + file.string());
  json merges = json::array();
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0)) continue;
    if (unicode::first_invalid_utf8(line))
      throw ArgumentError(file.string() + ":" + std::to_string(number) + ": not valid UTF-8");
    const auto space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw ArgumentError(file.string() + ":" + std::to_string(number) +
                          ": expected two tokens separated by one space, got \"" + line + "\"");
    merges.push_back({line.substr(0, space), line.substr(space + 1)});
  }
  return merges;
}

}  // namespace

std::optional<json> tokenizer_json_from_bpe_files(const fs::path& folder, const json& config) {
  const fs::path vocab_file = folder / "vocab.json", merges_file = folder / "merges.txt";
  if (!fs::is_regular_file(vocab_file) || !fs::is_regular_file(merges_file)) return std::nullopt;
  json vocab;
  try {
    vocab = read_json_file(vocab_file, "vocabulary");
  } catch (const std::runtime_error& e) {  // a user's file: bad input, not a fault
    throw ArgumentError(e.what());
  }
  if (!vocab.is_object())
    throw ArgumentError(vocab_file.string() + ": expected an object of token: id");
  const std::string klass = config.value("tokenizer_class", std::string("GPT2Tokenizer"));
  const bool roberta = klass.rfind("Roberta", 0) == 0;
  const bool add_prefix_space = option(config, "add_prefix_space", false);
  json j = {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", json::array()},
            {"normalizer", nullptr},
            {"pre_tokenizer",
             {{"type", "ByteLevel"},
              {"add_prefix_space", add_prefix_space},
              {"trim_offsets", true},
              {"use_regex", true}}},
            {"post_processor", nullptr},
            {"decoder",
             {{"type", "ByteLevel"},
              {"add_prefix_space", true},
              {"trim_offsets", true},
              {"use_regex", true}}},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"continuing_subword_prefix", ""},
              {"end_of_word_suffix", ""},
              {"fuse_unk", false},
              {"byte_fallback", false},
              {"vocab", vocab},
              {"merges", read_merges(merges_file)}}}};
  if (roberta) {
    // RobertaTokenizer's post-processor names sep and cls by id: known once the special tokens
    // are in place, so the ids come from the vocabulary (PreTrainedTokenizerFast adds any the
    // vocabulary lacks before encoding).
    const std::string sep = token_name(config, "sep_token", "</s>");
    const std::string cls = token_name(config, "cls_token", "<s>");
    if (!vocab.contains(sep) || !vocab.contains(cls))
      throw ArgumentError(vocab_file.string() + ": RobertaTokenizer needs its sep token \"" + sep +
                          "\" and cls token \"" + cls + "\" in the vocabulary");
    j["post_processor"] = {{"type", "RobertaProcessing"},
                           {"sep", {sep, vocab.at(sep)}},
                           {"cls", {cls, vocab.at(cls)}},
                           {"trim_offsets", option(config, "trim_offsets", true)},
                           {"add_prefix_space", add_prefix_space}};
  }
  return j;
}

}  // namespace ctrainer::tokenizers
