#pragma once
/// \file Corpus BLEU as sacreBLEU (2.6) computes it, which is what Hugging Face's run_translation
/// reports through `evaluate.load("sacrebleu")`: `sacrebleu.corpus_bleu(hypotheses, references)`
/// with its defaults (tokenizer "13a", "exp" smoothing, case-sensitive, n-grams up to 4).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ctrainer::text_metrics {

/// sacreBLEU's smooth_method (Chen and Cherry 2014): "none"; "floor" (method 1: a zero
/// precision becomes smooth_value / total, default 0.1); "add-k" (method 2: smooth_value, default
/// 1, added to the matches and totals of orders 2 and up); "exp" (method 3, mteval-v13a's: the
/// k-th zero precision becomes 1 / (2^k total)).
enum class BleuSmoothing { kNone, kFloor, kAddK, kExp };

/// sacreBLEU's tokenize: "13a" (mteval-v13a, WMT's standard) or "none" (split on whitespace).
enum class BleuTokenizer { k13a, kNone };

/// The arguments of `sacrebleu.corpus_bleu` (or `sacrebleu.BLEU(...)`), with its defaults.
struct BleuOptions {
  BleuSmoothing smooth_method = BleuSmoothing::kExp;
  /// sacreBLEU's smooth_value; unset means the method's default (floor 0.1, add-k 1).
  std::optional<double> smooth_value;
  /// Python's `str.lower()` of every segment before tokenizing.
  bool lowercase = false;
  BleuTokenizer tokenize = BleuTokenizer::k13a;
  /// use_effective_order: the geometric mean stops at the last order with any n-gram.
  bool use_effective_order = false;
  int max_ngram_order = 4;
};

/// sacreBLEU's BLEUScore.
struct BleuScore {
  /// BLEU in [0, 100].
  double score = 0.0;
  /// Clipped n-gram matches per order 1..max_ngram_order, summed over the corpus. With "add-k"
  /// sacreBLEU's returned `counts` (and `totals`) also include the smoothing added to orders 2 and
  /// up; these are the counts before it.
  std::vector<std::int64_t> counts;
  /// Hypothesis n-grams per order, summed over the corpus.
  std::vector<std::int64_t> totals;
  /// Smoothed n-gram precisions in percent (0 for orders after a zero total).
  std::vector<double> precisions;
  /// Brevity penalty: exp(1 - ref_len / sys_len) when sys_len < ref_len, else 1.
  double bp = 1.0;
  /// Hypothesis tokens.
  std::int64_t sys_len = 0;
  /// Per segment the reference length closest to the hypothesis's (the shorter on a tie), summed.
  std::int64_t ref_len = 0;
};

/// sacreBLEU's `Tokenizer13a()(line)`: drops "<skipped>", joins "-\n" hyphenations, turns the
/// other newlines into spaces, unescapes &quot; &amp; &lt; &gt; (in that order), splits off ASCII
/// punctuation except period, comma, apostrophe and hyphen; period and comma unless between two
/// digits; a hyphen after a digit; then single spaces between tokens (Python whitespace).
std::string tokenize_13a(std::string_view line);

/// `sacrebleu.corpus_bleu(hypotheses, reference_streams, ...)`: each segment preprocessed as
/// sacreBLEU does (optional lower-casing, trailing whitespace stripped, tokenized), n-gram matches
/// clipped by the largest count of the n-gram in any one reference, statistics summed over the
/// corpus. `reference_streams` holds one or more streams, each with one reference per
/// hypothesis (sacreBLEU's layout: `[refs]` for a single reference). Throws std::invalid_argument
/// when a stream's count differs from the hypotheses' (sacreBLEU would silently truncate to the
/// shorter), when there is no stream, or when there is no hypothesis (sacreBLEU raises too).
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& reference_streams,
                      const BleuOptions& options = {});

}  // namespace ctrainer::text_metrics
