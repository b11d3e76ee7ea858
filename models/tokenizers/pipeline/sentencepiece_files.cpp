#include <ctrainer/models/tokenizers/pipeline/sentencepiece_files.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <ctrainer/core/base64.h>
#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>
#include <ctrainer/models/tokenizers/pipeline/sentencepiece_model.h>

namespace ctrainer::tokenizers {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using PieceType = SentencePieceModel::PieceType;

const char* const kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's whitespace

enum class Construction { kLlama, kT5, kGeneric };

/// The byte positions inside `s` where a character starts (not 0): the places a piece can split.
std::vector<size_t> inner_boundaries(const std::string& s) {
  std::vector<size_t> out;
  for (size_t i = 1; i < s.size(); ++i)
    if ((static_cast<uint8_t>(s[i]) & 0xC0) != 0x80) out.push_back(i);
  return out;
}

/// transformers' generate_merges(vocab): every split of every piece whose halves are pieces, by
/// the merged piece's id, the shorter left half first.
json merges_by_id(const std::vector<std::string>& pieces,
                  const std::unordered_map<std::string, int64_t>& vocab) {
  json merges = json::array();
  for (const auto& piece : pieces)
    for (size_t cut : inner_boundaries(piece)) {
      std::string left = piece.substr(0, cut), right = piece.substr(cut);
      if (vocab.count(left) && vocab.count(right)) merges.push_back(json::array({left, right}));
    }
  return merges;
}

/// build_tokenizer_from_spm_proto's merges: splits of normal pieces into normal pieces, by the
/// merged piece's score (highest first), then its id, then the shorter left half.
json merges_by_score(const std::vector<std::string>& names, const SentencePieceModel& m) {
  std::unordered_set<std::string> normal;
  for (size_t i = 0; i < names.size(); ++i)
    if (m.pieces[i].type == PieceType::kNormal) normal.insert(names[i]);
  std::vector<std::tuple<double, size_t, size_t>> ranked;  // (-score, id, cut)
  for (size_t i = 0; i < names.size(); ++i) {
    if (m.pieces[i].type != PieceType::kNormal) continue;
    for (size_t cut : inner_boundaries(names[i]))
      if (normal.count(names[i].substr(0, cut)) && normal.count(names[i].substr(cut)))
        ranked.emplace_back(-static_cast<double>(m.pieces[i].score), i, cut);
  }
  std::sort(ranked.begin(), ranked.end());
  json merges = json::array();
  for (const auto& [score, id, cut] : ranked)
    merges.push_back(json::array({names[id].substr(0, cut), names[id].substr(cut)}));
  return merges;
}

json replace(const char* kind, const std::string& pattern, const std::string& content) {
  return {{"type", "Replace"}, {"pattern", {{kind, pattern}}}, {"content", content}};
}

json metaspace(const std::string& prepend_scheme, bool split) {
  return {{"type", "Metaspace"},
          {"replacement", kSpace},
          {"prepend_scheme", prepend_scheme},
          {"split", split}};
}

json added_token(int64_t id, const std::string& content, bool special) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

/// Python's re.escape: a backslash before each character it treats as special.
std::string regex_escape(const std::string& text) {
  static const std::string special = "()[]{}?*+-|^$\\.&~# \t\n\r\v\f";
  std::string out;
  for (char c : text) {
    if (special.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

/// A boolean of tokenizer_config.json: absent -> `fallback`, null -> false (as Python's
/// truthiness reads None).
bool config_flag(const json& config, const char* key, bool fallback, const fs::path& file) {
  if (!config.contains(key)) return fallback;
  const json& v = config.at(key);
  if (v.is_null()) return false;
  if (!v.is_boolean())
    throw ArgumentError(file.string() + ": \"" + key + "\" must be true or false, got " + v.dump());
  return v.get<bool>();
}

Construction construction_of(const std::string& class_name, const fs::path& model_file) {
  std::string base = class_name;
  if (base.ends_with("Fast")) base.resize(base.size() - 4);
  if (base == "LlamaTokenizer") return Construction::kLlama;
  if (base == "T5Tokenizer") return Construction::kT5;
  if (base.empty() || base == "PreTrainedTokenizer" || base == "TokenizersBackend" ||
      base == "PythonBackend")
    return Construction::kGeneric;
  throw ArgumentError(model_file.string() + ": tokenizer_class " + class_name +
                      " builds its tokenizer from a SentencePiece model in its own way, which this "
                      "build does not reproduce (it reads LlamaTokenizer, T5Tokenizer, and a model "
                      "with no class as transformers' generic path does); save the tokenizer with "
                      "transformers so that the folder holds a tokenizer.json");
}

/// Renames pieces as transformers' generic path does with tokenizer_config.json's
/// added_tokens_decoder (a BPE vocabulary only): the piece at each listed id takes the listed
/// name, unless that name is a piece keeping its own id.
void rename_from_added_tokens_decoder(std::vector<std::string>& names, const json& config) {
  if (!config.contains("added_tokens_decoder") || !config.at("added_tokens_decoder").is_object())
    return;
  std::map<size_t, std::string> renamed;
  for (const auto& [key, entry] : config.at("added_tokens_decoder").items()) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
    }
    if (used != key.size() || id < 0 || static_cast<size_t>(id) >= names.size()) continue;
    if (entry.is_object() && entry.contains("content") && entry.at("content").is_string())
      renamed[static_cast<size_t>(id)] = entry.at("content").get<std::string>();
  }
  std::unordered_set<std::string> kept;
  for (size_t i = 0; i < names.size(); ++i)
    if (!renamed.count(i)) kept.insert(names[i]);
  for (const auto& [id, name] : renamed)
    if (!kept.count(name)) names[id] = name;
}

}  // namespace

std::optional<SentencePieceTokenizer> tokenizer_from_sentencepiece(const fs::path& folder,
                                                                   const json& config,
                                                                   const std::string& class_name) {
  const fs::path config_file = folder / "tokenizer_config.json";
  fs::path model_file = folder / "tokenizer.model";
  std::string base = class_name;
  if (base.ends_with("Fast")) base.resize(base.size() - 4);
  if (!fs::is_regular_file(model_file)) {
    if (base != "T5Tokenizer" || !fs::is_regular_file(folder / "spiece.model")) return std::nullopt;
    model_file = folder / "spiece.model";
  }
  const Construction how = construction_of(class_name, model_file);
  const SentencePieceModel m = SentencePieceModel::from_file(model_file);

  SentencePieceTokenizer out;
  out.model_file = model_file;
  std::vector<std::string> names;
  for (const auto& p : m.pieces) names.push_back(p.piece);
  json added = json::array();
  json& j = out.tokenizer_json;
  j = {{"version", "1.0"},
       {"truncation", nullptr},
       {"padding", nullptr},
       {"post_processor", nullptr}};

  if (how == Construction::kT5) {
    // T5Tokenizer: Unigram over the pieces and the sentinels, unknown id 2 whatever the model
    // says; only the character map normalizes.
    const json extra = config.value("extra_ids", json(100));
    if (!extra.is_number_integer() || extra.get<int64_t>() < 0 || extra.get<int64_t>() > 100000)
      throw ArgumentError(config_file.string() + ": \"extra_ids\" must be a count, got " +
                          extra.dump());
    json vocab = json::array();
    for (const auto& p : m.pieces)
      vocab.push_back(json::array({p.piece, static_cast<double>(p.score)}));
    for (int64_t i = 0; i < static_cast<int64_t>(m.pieces.size()); ++i) {
      const PieceType type = m.pieces[static_cast<size_t>(i)].type;
      if (type == PieceType::kControl || type == PieceType::kUserDefined)
        added.push_back(added_token(i, names[static_cast<size_t>(i)], type == PieceType::kControl));
    }
    for (int64_t i = extra.get<int64_t>() - 1; i >= 0; --i) {
      const std::string sentinel = "<extra_id_" + std::to_string(i) + ">";
      added.push_back(added_token(static_cast<int64_t>(vocab.size()), sentinel, true));
      vocab.push_back(json::array({sentinel, 0.0}));
    }
    j["model"] = {{"type", "Unigram"}, {"unk_id", 2}, {"vocab", vocab}, {"byte_fallback", false}};
    j["normalizer"] =
        m.precompiled_charsmap.empty()
            ? json(nullptr)
            : json{{"type", "Precompiled"},
                   {"precompiled_charsmap",
                    base64_encode(reinterpret_cast<const uint8_t*>(m.precompiled_charsmap.data()),
                                  m.precompiled_charsmap.size())}};
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers", json::array({json{{"type", "WhitespaceSplit"}},
                                                         metaspace("always", true)})}};
    j["decoder"] = metaspace("always", true);
    out.default_special_tokens = {
        {"eos_token", "</s>"}, {"unk_token", "<unk>"}, {"pad_token", "<pad>"}};
    out.post_processor = SentencePieceTokenizer::PostProcessor::kT5;
  } else if (how == Construction::kLlama) {
    // LlamaTokenizer: BPE over every piece, bytes for what the pieces miss, no unknown token.
    std::unordered_map<std::string, int64_t> vocab;
    json vocab_json = json::object();
    for (size_t i = 0; i < names.size(); ++i) {
      vocab.emplace(names[i], static_cast<int64_t>(i));
      vocab_json[names[i]] = static_cast<int64_t>(i);
      const PieceType type = m.pieces[i].type;
      if (type == PieceType::kControl || type == PieceType::kUserDefined)
        added.push_back(
            added_token(static_cast<int64_t>(i), names[i], type == PieceType::kControl));
    }
    j["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", nullptr},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", true},
                  {"ignore_merges", false},
                  {"vocab", vocab_json},
                  {"merges", merges_by_id(names, vocab)}};
    const bool add_prefix_space = !config.contains("add_prefix_space") ||
                                  config.at("add_prefix_space").is_null() ||
                                  config_flag(config, "add_prefix_space", true, config_file);
    const bool legacy = config_flag(config, "legacy", false, config_file);
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] =
        metaspace(add_prefix_space ? (legacy ? "always" : "first") : "never", false);
    json decoders = json::array(
        {replace("String", kSpace, " "), json{{"type", "ByteFallback"}}, json{{"type", "Fuse"}}});
    if (add_prefix_space)
      decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    j["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    out.default_special_tokens = {
        {"unk_token", "<unk>"}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
    out.default_padding_side = "left";
  } else {
    // The generic path: the model's own specs, so that it encodes as sentencepiece does.
    const bool legacy = config_flag(config, "legacy", true, config_file);
    std::vector<std::string> user_defined;
    if (m.model_type == SentencePieceModel::ModelType::kUnigram) {
      json vocab = json::array();
      for (const auto& p : m.pieces)
        vocab.push_back(json::array({p.piece, static_cast<double>(p.score)}));
      j["model"] = {{"type", "Unigram"},
                    {"unk_id", m.unk_id},
                    {"vocab", vocab},
                    {"byte_fallback", m.byte_fallback}};
    } else {  // BPE, and WORD / CHAR models, as transformers reads them
      rename_from_added_tokens_decoder(names, config);
      json vocab_json = json::object();
      for (size_t i = 0; i < names.size(); ++i) vocab_json[names[i]] = static_cast<int64_t>(i);
      bool any_user_defined = false;
      for (const auto& p : m.pieces) any_user_defined |= p.type == PieceType::kUserDefined;
      j["model"] = {{"type", "BPE"},
                    {"dropout", nullptr},
                    {"unk_token", m.unk_piece},
                    {"continuing_subword_prefix", nullptr},
                    {"end_of_word_suffix", nullptr},
                    {"fuse_unk", true},
                    {"byte_fallback", m.byte_fallback},
                    {"ignore_merges", any_user_defined},
                    {"vocab", vocab_json},
                    {"merges", merges_by_score(names, m)}};
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (m.pieces[i].type == PieceType::kUserDefined) user_defined.push_back(names[i]);
      // User-defined pieces are isolated by the pre-tokenizer instead of being added tokens.
      if (m.pieces[i].type == PieceType::kControl)
        added.push_back(added_token(static_cast<int64_t>(i), names[i], true));
    }
    json normalizers = json::array();
    if (!m.precompiled_charsmap.empty())
      normalizers.push_back(
          {{"type", "Precompiled"},
           {"precompiled_charsmap",
            base64_encode(reinterpret_cast<const uint8_t*>(m.precompiled_charsmap.data()),
                          m.precompiled_charsmap.size())}});
    if (m.remove_extra_whitespaces) {
      normalizers.push_back(replace("Regex", "\\A +| +\\z", ""));
      normalizers.push_back(replace("Regex", " {2,}", " "));
    }
    if (m.escape_whitespaces) normalizers.push_back(replace("String", " ", kSpace));
    if (m.add_dummy_prefix && legacy)
      normalizers.push_back(
          replace("Regex", std::string("\\A") + kSpace, std::string(kSpace) + kSpace));
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", normalizers}};
    json pre_tokenizers = json::array();
    if (m.add_dummy_prefix) pre_tokenizers.push_back(metaspace(legacy ? "always" : "first", false));
    if (!user_defined.empty()) {
      std::stable_sort(user_defined.begin(), user_defined.end(),
                       [](const std::string& a, const std::string& b) {
                         return to_u32(a).size() > to_u32(b).size();
                       });
      std::string pattern;
      for (const auto& piece : user_defined)
        pattern += (pattern.empty() ? "" : "|") + regex_escape(piece);
      pre_tokenizers.push_back({{"type", "Split"},
                                {"pattern", {{"Regex", pattern}}},
                                {"behavior", "Isolated"},
                                {"invert", false}});
    }
    j["pre_tokenizer"] = pre_tokenizers.empty()
                             ? json(nullptr)
                             : json{{"type", "Sequence"}, {"pretokenizers", pre_tokenizers}};
    json decoders = json::array({replace("String", kSpace, " ")});
    if (m.byte_fallback) decoders.push_back({{"type", "ByteFallback"}});
    if (m.add_dummy_prefix) {
      decoders.push_back({{"type", "Fuse"}});
      decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    } else if (m.byte_fallback) {
      decoders.push_back({{"type", "Fuse"}});
    }
    j["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    // The trainer spec's special pieces, unless the config names others.
    const auto piece_or = [](const std::string& piece, const char* fallback) {
      return piece.empty() ? std::string(fallback) : piece;
    };
    if (m.bos_id >= 0) out.default_special_tokens["bos_token"] = piece_or(m.bos_piece, "<s>");
    if (m.eos_id >= 0) out.default_special_tokens["eos_token"] = piece_or(m.eos_piece, "</s>");
    if (m.unk_id >= 0) out.default_special_tokens["unk_token"] = piece_or(m.unk_piece, "<unk>");
  }
  std::sort(added.begin(), added.end(),
            [](const json& a, const json& b) { return a.at("id") < b.at("id"); });
  j["added_tokens"] = added;
  return out;
}

json sentencepiece_post_processor(const SentencePieceTokenizer& built, const json& config,
                                  const std::optional<TokenAndId>& bos,
                                  const std::optional<TokenAndId>& eos) {
  const auto sequence = [](const char* id, int type_id) {
    return json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
  };
  const auto special = [](const std::string& id, int type_id) {
    return json{{"SpecialToken", {{"id", id}, {"type_id", type_id}}}};
  };
  const auto entry = [](const std::string& name, const TokenAndId& token) {
    return json{{"id", name}, {"ids", json::array({token.id})}, {"tokens", json::array({name})}};
  };
  if (built.post_processor == SentencePieceTokenizer::PostProcessor::kT5) {
    if (!eos)
      throw ArgumentError(built.model_file.string() +
                          ": T5Tokenizer needs an eos_token (its template ends each sequence "
                          "with </s>), and the config sets it to null");
    return {{"type", "TemplateProcessing"},
            {"single", json::array({sequence("A", 0), special("</s>", 0)})},
            {"pair", json::array({sequence("A", 0), special("</s>", 0), sequence("B", 0),
                                  special("</s>", 0)})},
            {"special_tokens", {{"</s>", entry("</s>", *eos)}}}};
  }
  const fs::path config_file = built.model_file.parent_path() / "tokenizer_config.json";
  const bool add_bos = bos && config_flag(config, "add_bos_token", false, config_file);
  const bool add_eos = eos && config_flag(config, "add_eos_token", false, config_file);
  json single = json::array(), pair = json::array(), specials = json::object();
  if (add_bos) single.push_back(special(bos->token, 0));
  single.push_back(sequence("A", 0));
  if (add_eos) single.push_back(special(eos->token, 0));
  pair = single;
  if (add_bos) pair.push_back(special(bos->token, 1));
  pair.push_back(sequence("B", 1));
  if (add_eos) pair.push_back(special(eos->token, 1));
  if (add_bos) specials[bos->token] = entry(bos->token, *bos);
  if (add_eos) specials[eos->token] = entry(eos->token, *eos);
  return {{"type", "TemplateProcessing"},
          {"single", single},
          {"pair", pair},
          {"special_tokens", specials}};
}

}  // namespace ctrainer::tokenizers
