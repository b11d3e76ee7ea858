#pragma once
/// \file Patterns that split or replace text in the tokenizer pipeline (HF tokenizers'
/// `Pattern`): a regular expression through Oniguruma (the engine the Rust library itself uses,
/// so GPT-2's lookahead and Llama 3's Unicode classes behave the same), a literal string, or a
/// character class. find_matches covers the whole text with alternating gaps and matches.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>

namespace ctrainer::tokenizers {

/// A compiled Oniguruma expression (Ruby syntax, UTF-8), shareable between threads.
class Regex {
 public:
  /// Compiles `pattern`; throws ArgumentError with Oniguruma's message when it is invalid.
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  const std::string& pattern() const { return pattern_; }
  /// Every match, left to right, as the Rust onig crate's find_iter yields them (an empty
  /// match right after the previous one is skipped).
  std::vector<Offsets> find_all(std::string_view text) const;

 private:
  std::string pattern_;
  void* regex_ = nullptr;  // OnigRegex, kept out of this header
};

/// What splits or is replaced: a regex, or a literal string (escaped into a regex, as HF does).
struct Pattern {
  enum class Kind { kString, kRegex } kind = Kind::kString;
  std::string text;  ///< the literal, or the expression
  std::shared_ptr<const Regex> regex;

  static Pattern literal(std::string s);
  static Pattern expression(std::string s);
  /// Matched byte ranges of `text`.
  std::vector<Offsets> find_all(std::string_view text) const;
};

/// The whole of `text` as consecutive pieces, each flagged true when it is a match.
using MatchList = std::vector<std::pair<Offsets, bool>>;

/// Gaps and matches of `pattern` in `text` (an empty text is one empty gap).
MatchList find_matches(const Pattern& pattern, std::string_view text);
/// Every character for which `is_match` holds is a match of its own.
MatchList find_matches(const std::function<bool(char32_t)>& is_match, std::string_view text);

/// How a split treats the matched delimiters (HF's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

/// `matches` (gaps and matches covering a text) regrouped by `behavior`, inverted first when
/// `invert`; returns the ranges to keep.
std::vector<Offsets> split_ranges(MatchList matches, SplitBehavior behavior, bool invert);

}  // namespace ctrainer::tokenizers
