#pragma once
/// \file The models of a tokenizer.json (HF tokenizers' `models` module): what turns one split
/// (a word) into tokens. BPE (merges by rank, byte_fallback, ignore_merges, continuing-subword
/// prefix, end-of-word suffix), WordPiece (greedy longest match), WordLevel (whole words) and
/// Unigram (Viterbi over the pieces' log-probabilities).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/models/tokenizers/pipeline/pre_tokenized_string.h>

namespace ctrainer::tokenizers {

class TokenModel {
 public:
  virtual ~TokenModel() = default;
  /// Tokens of one split, offsets in bytes of `text`.
  virtual std::vector<Token> tokenize(const std::string& text) const = 0;
  virtual std::optional<int64_t> token_to_id(std::string_view token) const = 0;
  virtual std::optional<std::string> id_to_token(int64_t id) const = 0;
  /// Number of entries in the vocabulary.
  virtual int64_t vocab_size() const = 0;
  virtual nlohmann::json to_json() const = 0;
};

/// The model `j` describes (its "type", or BPE/WordPiece/WordLevel/Unigram guessed from its
/// fields as the Rust library does for files without one).
std::shared_ptr<const TokenModel> token_model_from_json(const nlohmann::json& j,
                                                        const std::string& path);

/// The models by kind (token_model_from_json dispatches to them).
std::shared_ptr<const TokenModel> bpe_model_from_json(const nlohmann::json& j,
                                                      const std::string& path);
std::shared_ptr<const TokenModel> unigram_model_from_json(const nlohmann::json& j,
                                                          const std::string& path);

/// A token -> id vocabulary with its inverse.
class Vocabulary {
 public:
  Vocabulary() = default;
  /// From {"token": id, ...}; throws naming `path` on a non-integer or repeated id.
  Vocabulary(const nlohmann::json& j, const std::string& path);
  void add(const std::string& token, int64_t id);
  std::optional<int64_t> find(std::string_view token) const;
  std::optional<std::string> token(int64_t id) const;
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }
  nlohmann::json to_json() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> ids_;
  std::unordered_map<int64_t, std::string> tokens_;
};

}  // namespace ctrainer::tokenizers
