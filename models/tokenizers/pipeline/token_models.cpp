#include <ctrainer/models/tokenizers/pipeline/token_models.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/pipeline/json_fields.h>

namespace ctrainer::tokenizers {

namespace {

using nlohmann::json;

/// Greedy longest-match-first sub-words (BERT's WordPiece, HF's models::wordpiece).
class WordPieceModel : public TokenModel {
 public:
  WordPieceModel(Vocabulary vocab, std::string unk, std::string prefix, int64_t max_chars,
                 const std::string& path)
      : vocab_(std::move(vocab)),
        unk_(std::move(unk)),
        prefix_(std::move(prefix)),
        max_chars_(max_chars) {
    const auto id = vocab_.find(unk_);
    if (!id)
      throw TokenizerJsonError(json_child(path, "unk_token"),
                               "\"" + unk_ + "\" is not in the vocabulary");
    unk_id_ = *id;
  }

  std::vector<Token> tokenize(const std::string& text) const override {
    if (static_cast<int64_t>(to_u32(text).size()) > max_chars_)
      return {{unk_id_, unk_, {0, text.size()}}};
    std::vector<Token> pieces;
    size_t start = 0;
    std::string candidate;
    while (start < text.size()) {
      size_t end = text.size();
      bool found = false;
      while (start < end) {
        candidate.assign(start > 0 ? prefix_ : std::string());
        candidate.append(text, start, end - start);
        if (const auto id = vocab_.find(candidate)) {
          pieces.push_back({*id, candidate, {start, end}});
          found = true;
          break;
        }
        // Back off by one character.
        --end;
        while (end > start && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
      }
      if (!found) return {{unk_id_, unk_, {0, text.size()}}};
      start = end;
    }
    return pieces;
  }
  std::optional<int64_t> token_to_id(std::string_view token) const override {
    return vocab_.find(token);
  }
  std::optional<std::string> id_to_token(int64_t id) const override { return vocab_.token(id); }
  int64_t vocab_size() const override { return vocab_.size(); }
  json to_json() const override {
    return {{"type", "WordPiece"},
            {"unk_token", unk_},
            {"continuing_subword_prefix", prefix_},
            {"max_input_chars_per_word", max_chars_},
            {"vocab", vocab_.to_json()}};
  }

 private:
  Vocabulary vocab_;
  std::string unk_, prefix_;
  int64_t max_chars_;
  int64_t unk_id_ = 0;
};

/// Whole words (HF's models::wordlevel).
class WordLevelModel : public TokenModel {
 public:
  WordLevelModel(Vocabulary vocab, std::string unk)
      : vocab_(std::move(vocab)), unk_(std::move(unk)) {}
  std::vector<Token> tokenize(const std::string& text) const override {
    if (const auto id = vocab_.find(text)) return {{*id, text, {0, text.size()}}};
    const auto unk_id = vocab_.find(unk_);
    if (!unk_id)
      throw ArgumentError("WordLevel: \"" + text +
                          "\" is not in the vocabulary and the unk "
                          "token \"" +
                          unk_ + "\" is not either");
    return {{*unk_id, unk_, {0, text.size()}}};
  }
  std::optional<int64_t> token_to_id(std::string_view token) const override {
    return vocab_.find(token);
  }
  std::optional<std::string> id_to_token(int64_t id) const override { return vocab_.token(id); }
  int64_t vocab_size() const override { return vocab_.size(); }
  json to_json() const override {
    return {{"type", "WordLevel"}, {"vocab", vocab_.to_json()}, {"unk_token", unk_}};
  }

 private:
  Vocabulary vocab_;
  std::string unk_;
};

}  // namespace

Vocabulary::Vocabulary(const json& j, const std::string& path) {
  if (!j.is_object())
    throw TokenizerJsonError(path,
                             "expected an object of token: id, got " + j.dump().substr(0, 80));
  for (const auto& [token, id] : j.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      throw TokenizerJsonError(json_child(path, token),
                               "expected a non-negative integer id, got " + id.dump());
    add(token, id.get<int64_t>());
  }
}

void Vocabulary::add(const std::string& token, int64_t id) {
  ids_[token] = id;
  tokens_[id] = token;
}

std::optional<int64_t> Vocabulary::find(std::string_view token) const {
  const auto it = ids_.find(token);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Vocabulary::token(int64_t id) const {
  const auto it = tokens_.find(id);
  if (it == tokens_.end()) return std::nullopt;
  return it->second;
}

json Vocabulary::to_json() const {
  json j = json::object();
  for (const auto& [token, id] : ids_) j[token] = id;
  return j;
}

std::shared_ptr<const TokenModel> token_model_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) throw TokenizerJsonError(path, "expected a model object, got " + j.dump());
  std::string type;
  if (j.contains("type")) {
    type = json_type(j, path, {"BPE", "WordPiece", "WordLevel", "Unigram"}, "model");
  } else if (j.contains("merges")) {
    type = "BPE";
  } else if (j.contains("vocab") && j.at("vocab").is_array()) {
    type = "Unigram";
  } else if (j.contains("continuing_subword_prefix") || j.contains("max_input_chars_per_word")) {
    type = "WordPiece";
  } else {
    type = "WordLevel";
  }
  if (type == "BPE") return bpe_model_from_json(j, path);
  if (type == "Unigram") return unigram_model_from_json(j, path);
  Vocabulary vocab(json_field(j, path, "vocab"), json_child(path, "vocab"));
  if (type == "WordPiece")
    return std::make_shared<WordPieceModel>(
        std::move(vocab), json_optional_string(j, path, "unk_token").value_or("[UNK]"),
        json_optional_string(j, path, "continuing_subword_prefix").value_or("##"),
        json_int(j, path, "max_input_chars_per_word", 100), path);
  return std::make_shared<WordLevelModel>(
      std::move(vocab), json_optional_string(j, path, "unk_token").value_or("<unk>"));
}

}  // namespace ctrainer::tokenizers
