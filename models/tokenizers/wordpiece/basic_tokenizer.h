#pragma once
/// \file BasicTokenizer: BERT's text cleaning, CJK spacing, lower-casing / accent stripping and
/// whitespace + punctuation splitting (HF tokenization_bert.py `BasicTokenizer`).
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace ctrainer {

/// Words in one shared buffer, so tokenizing a sentence does not allocate a string per word.
class WordList {
 public:
  void clear() {
    text_.clear();
    ends_.clear();
  }
  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](size_t i) const {
    const size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(text_).substr(begin, ends_[i] - begin);
  }
  /// Appends a complete word (ignored when empty).
  void add(std::string_view word) {
    text_.append(word);
    finish_word();
  }
  /// Appends one code point to the word being built.
  void append(char32_t cp);
  /// Closes the word being built; an empty one is dropped.
  void finish_word() {
    if (text_.size() > (ends_.empty() ? 0 : ends_.back())) ends_.push_back(text_.size());
  }

 private:
  std::string text_;
  std::vector<size_t> ends_;
};

/// Options of BasicTokenizer and BertTokenizer (HF BertTokenizer's keyword arguments).
struct BasicTokenizerOptions {
  /// Lower-case the text (use true with uncased vocabularies, false with cased ones).
  bool do_lower_case = true;
  /// Strip accents (NFD, then drop nonspacing marks). Unset: follows do_lower_case.
  std::optional<bool> strip_accents;
  /// Put spaces around CJK ideographs so that each becomes its own word.
  bool tokenize_chinese_chars = true;
  /// Whitespace-separated words kept verbatim: not lower-cased, not split on punctuation and not
  /// split into word pieces.
  std::vector<std::string> never_split;
};

/// Splits text into words exactly like the Rust tokenizers' BertNormalizer + BertPreTokenizer
/// (what BertTokenizerFast runs, and BertTokenizer since transformers 5): drop NUL, U+FFFD and
/// control characters; map whitespace to spaces; space out CJK ideographs; split on whitespace;
/// lower-case (per character, no final sigma) and strip accents per word; split every
/// punctuation character off. tests/parity/tokenizer_parity.py checks it on the GLUE files.
/// Thread-safe (scratch buffers are thread-local).
class BasicTokenizer {
 public:
  explicit BasicTokenizer(BasicTokenizerOptions options = {});

  /// Replaces `out` with the words of `text`. Throws ArgumentError on invalid UTF-8.
  void tokenize(std::string_view text, WordList& out) const;
  /// Convenience overload returning strings.
  std::vector<std::string> tokenize(std::string_view text) const;
  /// Whether `word` is one of the never_split words.
  bool is_never_split(std::string_view word) const {
    return !never_split_.empty() && never_split_.count(std::string(word)) > 0;
  }
  const BasicTokenizerOptions& options() const { return options_; }

 private:
  BasicTokenizerOptions options_;
  bool strip_accents_;
  std::unordered_set<std::string> never_split_;
};

}  // namespace ctrainer
