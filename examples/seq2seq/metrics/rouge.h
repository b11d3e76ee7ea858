#pragma once
/// \file ROUGE as Google's `rouge_score` package (0.1.2) computes it, which is what Hugging Face's
/// `evaluate.load("rouge")` and run_summarization report: `rouge_scorer.RougeScorer(["rouge1",
/// "rouge2", "rougeL", "rougeLsum"], use_stemmer=...)`. Scores are fractions in [0, 1].
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ctrainer::text_metrics {

/// rouge_score's `scoring.Score`: precision (against the prediction's length), recall (against
/// the reference's) and their harmonic mean (0 when both are 0).
struct RougeScore {
  double precision = 0.0;
  double recall = 0.0;
  double fmeasure = 0.0;
};

/// The ROUGE types run_summarization reports, in its order.
inline const std::vector<std::string> kSummarizationRougeTypes = {"rouge1", "rouge2", "rougeL",
                                                                  "rougeLsum"};

/// rouge_score's `tokenize.tokenize(text, stemmer)`: Python's `text.lower()`, every run of
/// characters other than ASCII a-z / 0-9 becomes a separator (so accented and non-Latin letters
/// never make tokens; "İ" lowers to "i" + a combining dot and the Kelvin sign to "k"), then with
/// `use_stemmer` nltk's Porter stem (porter_stem) of each token longer than 3 characters.
std::vector<std::string> rouge_tokenize(std::string_view text, bool use_stemmer);

/// rouge_score's ROUGE-N (`_score_ngrams` of `_create_ngrams`): clipped n-gram overlap over the
/// prediction's n-gram count (precision) and the reference's (recall); 0 when either is empty.
RougeScore rouge_n(const std::vector<std::string>& prediction_tokens,
                   const std::vector<std::string>& reference_tokens, int n);

/// rouge_score's ROUGE-L (`_score_lcs`): longest common subsequence length over the prediction's
/// length (precision) and the reference's (recall); 0 when either has no token.
RougeScore rouge_l(const std::vector<std::string>& prediction_tokens,
                   const std::vector<std::string>& reference_tokens);

/// rouge_score's summary-level ROUGE-L (`_summary_level_lcs`), on sentences already tokenized:
/// for each reference sentence the union of its LCS with every prediction sentence (one LCS per
/// pair, chosen by rouge_score's backtracking), each token of the union a hit only while it has
/// occurrences left in both texts (ROUGE-1.5.5's guard against double counting); hits over the
/// prediction's token count (precision) and the reference's (recall).
RougeScore rouge_lsum(const std::vector<std::vector<std::string>>& prediction_sentences,
                      const std::vector<std::vector<std::string>>& reference_sentences);

/// The sentences rougeLsum scores: `text` split on "\n" only, empty lines dropped (a line of
/// spaces or punctuation stays, as a sentence without tokens), each tokenized by rouge_tokenize.
std::vector<std::vector<std::string>> rouge_lsum_sentences(std::string_view text, bool use_stemmer);

/// `RougeScorer(rouge_types, use_stemmer).score(reference, prediction)` (note rouge_score's
/// argument order: target first). `rouge_types` are "rouge1".."rouge9", "rougeL" and "rougeLsum";
/// another name throws std::invalid_argument.
std::map<std::string, RougeScore> rouge_scores(
    std::string_view prediction, std::string_view reference, bool use_stemmer,
    const std::vector<std::string>& rouge_types = kSummarizationRougeTypes);

/// The corpus ROUGE of each type: the plain mean of the per-pair fmeasures of rouge_scores.
/// Hugging Face's `evaluate` reports the median of a bootstrap instead (rouge_score's
/// BootstrapAggregator, unseeded, so it varies from run to run); the plain mean is its
/// deterministic centre. Throws std::invalid_argument when the counts differ or are zero.
std::map<std::string, double> rouge_corpus(
    const std::vector<std::string>& predictions, const std::vector<std::string>& references,
    bool use_stemmer, const std::vector<std::string>& rouge_types = kSummarizationRougeTypes);

}  // namespace ctrainer::text_metrics
