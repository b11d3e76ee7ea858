#pragma once
/// \file WordpieceTokenizer: greedy longest-match-first WordPiece (HF `WordpieceTokenizer`).
#include <cstdint>
#include <string_view>
#include <vector>

#include <ctrainer/models/tokenizers/wordpiece/vocab.h>

namespace ctrainer {

/// Splits one word into vocabulary pieces: the longest prefix found in the vocabulary, then the
/// longest "##"-prefixed continuation, and so on. A word with a part that matches nothing, or
/// longer than max_input_chars_per_word code points, becomes the single unknown token.
class WordpieceTokenizer {
 public:
  /// `vocab` must outlive this object.
  WordpieceTokenizer(const Vocab& vocab, int64_t unk_id, size_t max_input_chars_per_word = 100);

  /// Appends the piece ids of `word` (valid UTF-8, no whitespace) to `ids`.
  void tokenize(std::string_view word, std::vector<int64_t>& ids) const;

 private:
  const Vocab* vocab_;
  int64_t unk_id_;
  size_t max_input_chars_per_word_;
};

}  // namespace ctrainer
