#pragma once
/// \file Corpus chrF and chrF++ as sacreBLEU (2.6) computes them: `sacrebleu.corpus_chrf(
/// hypotheses, references)` (character 6-grams, beta 2) and `sacrebleu.CHRF(word_order=2)` for
/// chrF++. Hugging Face's `evaluate.load("chrf")` calls the same CHRF class.
#include <cstdint>
#include <string>
#include <vector>

namespace ctrainer::text_metrics {

/// The arguments of `sacrebleu.CHRF(...)`, with its defaults.
struct ChrfOptions {
  /// Character n-gram orders 1..char_order, over Unicode code points.
  int char_order = 6;
  /// Word n-gram orders 1..word_order (2 is chrF++). Words are split on whitespace, with one
  /// ASCII punctuation character split off the end (or else the start) of each longer word.
  int word_order = 0;
  /// Recall weighs beta times as much as precision.
  double beta = 2.0;
  /// Python's `str.lower()` of every segment first.
  bool lowercase = false;
  /// Keep whitespace in the character n-grams (by default every whitespace character, in
  /// Python's sense, is removed first, so n-grams span word boundaries).
  bool whitespace = false;
  /// eps_smoothing: average the per-order F-scores with 1e-16 for empty orders (chrF++.py's,
  /// NLTK's and Moses' way) instead of sacreBLEU's default F-score of the precision and recall
  /// averaged over the effective orders (those where both sides have n-grams).
  bool eps_smoothing = false;
};

/// sacreBLEU's CHRFScore, with the corpus statistics it is computed from.
struct ChrfScore {
  /// chrF in [0, 100].
  double score = 0.0;
  /// Per order (character orders first, then word orders) three counts summed over the corpus:
  /// hypothesis n-grams (0 for a segment whose reference has none of that order), reference
  /// n-grams, and clipped matches. Of several references, each segment uses the one with the
  /// best segment-level chrF (the first on a tie).
  std::vector<std::int64_t> statistics;
};

/// `sacrebleu.CHRF(**options).corpus_score(hypotheses, reference_streams)`
/// (`sacrebleu.corpus_chrf(hypotheses, reference_streams)` with the defaults). Each stream holds
/// one reference per hypothesis. Throws std::invalid_argument when a stream's count differs
/// from the hypotheses' (sacreBLEU would silently truncate), when there is no stream, or when
/// there is no hypothesis (sacreBLEU raises too).
ChrfScore corpus_chrf(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& reference_streams,
                      const ChrfOptions& options = {});

}  // namespace ctrainer::text_metrics
