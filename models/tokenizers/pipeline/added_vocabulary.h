#pragma once
/// \file Added tokens (tokenizer.json's "added_tokens", HF tokenizers' AddedVocabulary): tokens
/// found in the text before the model runs, matched leftmost-longest, either on the raw text
/// (normalized: false) or after normalization, with single_word, lstrip and rstrip; special
/// ones are skipped when decoding with skip_special_tokens.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/models/tokenizers/pipeline/normalizers.h>
#include <ctrainer/models/tokenizers/pipeline/pre_tokenized_string.h>

namespace ctrainer::tokenizers {

struct AddedToken {
  int64_t id = 0;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  /// From tokenizer.json's "added_tokens" array; `normalizer` normalizes the normalized ones.
  AddedVocabulary(const nlohmann::json& list, const std::string& path,
                  const std::shared_ptr<const Normalizer>& normalizer);

  /// The text of one sequence, cut at the added tokens (which get their ids) and with the
  /// rest normalized (HF's extract_and_normalize).
  PreTokenizedString extract_and_normalize(const std::string& text,
                                           const Normalizer* normalizer) const;

  /// Adds `token` (its content not empty); `normalizer` normalizes it when it is `normalized`.
  void add(AddedToken token, const Normalizer* normalizer);
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  std::optional<int64_t> token_to_id(const std::string& content) const;
  std::optional<std::string> id_to_token(int64_t id) const;
  bool is_special(const std::string& content) const;
  nlohmann::json to_json() const;

 private:
  struct Matcher {
    /// Patterns by first byte, longest first: leftmost-longest matching.
    std::unordered_map<unsigned char, std::vector<std::pair<std::string, size_t>>> by_first_byte;
  };
  std::vector<NormalizedString> split_at_tokens(NormalizedString&& text, const Matcher& matcher,
                                                std::vector<std::optional<size_t>>& token_of) const;
  void add_pattern(Matcher& matcher, const std::string& pattern, size_t token) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<int64_t, size_t> by_id_;
  Matcher raw_, normalized_;
};

}  // namespace ctrainer::tokenizers
