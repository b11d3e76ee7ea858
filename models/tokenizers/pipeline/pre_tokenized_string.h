#pragma once
/// \file PreTokenizedString: the text of one sequence cut into splits (words), each a
/// NormalizedString, which the model then turns into tokens (HF tokenizers' pre_tokenizer.rs).
/// Splits that already carry tokens (added tokens) are left alone by later steps.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>

namespace ctrainer::tokenizers {

/// A token of the model: its id, text and byte offsets in the split it came from.
struct Token {
  int64_t id = 0;
  std::string value;
  Offsets offsets{0, 0};
};

struct Split {
  NormalizedString normalized;
  std::optional<std::vector<Token>> tokens;
};

/// A token with its offsets in the original text (characters) and its word.
struct PositionedToken {
  int64_t id = 0;
  std::string value;
  Offsets offsets{0, 0};
  int64_t word = 0;
};

class PreTokenizedString {
 public:
  explicit PreTokenizedString(std::string original);

  const std::string& original() const { return original_; }
  std::vector<Split>& splits() { return splits_; }
  const std::vector<Split>& splits() const { return splits_; }

  /// Replaces each split without tokens by the pieces `cut` makes of it; empty pieces are
  /// dropped (HF's PreTokenizedString::split).
  void split(const std::function<std::vector<NormalizedString>(size_t, NormalizedString&&)>& cut);
  /// Applies `change` to each split without tokens.
  void normalize(const std::function<void(NormalizedString&)>& change);
  /// Gives each split without tokens the tokens `model` makes of its text.
  void tokenize(const std::function<std::vector<Token>(const std::string&)>& model);

  /// Every token with its offsets mapped back to the original text, as character offsets
  /// (HF's into_encoding with OffsetType::Char); the word is the split's index.
  std::vector<PositionedToken> into_tokens() const;

 private:
  std::string original_;
  std::vector<Split> splits_;
};

/// Cuts `text` into the pieces of `ranges` (normalized byte ranges).
std::vector<NormalizedString> slices(const NormalizedString& text,
                                     const std::vector<Offsets>& ranges);

}  // namespace ctrainer::tokenizers
