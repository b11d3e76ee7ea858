// Mirrors rouge_score/rouge_scorer.py and tokenize.py; the comments name the Python functions.
// Every division and the f-measure are the same double operations in the same order, so the
// scores are equal to the bit, not only close.
#include <ctrainer/examples/seq2seq/metrics/rouge.h>

#include <ctrainer/examples/seq2seq/metrics/porter_stemmer.h>
#include <ctrainer/examples/seq2seq/metrics/python_text.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace ctrainer::text_metrics {
namespace {

bool is_ascii_lower_alphanumeric(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/// scoring.fmeasure.
double fmeasure(double precision, double recall) {
  if (precision + recall > 0) return 2 * precision * recall / (precision + recall);
  return 0.0;
}

RougeScore score_from_counts(double matches, double prediction_count, double reference_count) {
  RougeScore score;
  score.precision = matches / prediction_count;
  score.recall = matches / reference_count;
  score.fmeasure = fmeasure(score.precision, score.recall);
  return score;
}

/// _lcs_table: table[i][j] = LCS length of reference[:i] and candidate[:j].
std::vector<std::vector<int>> lcs_table(const std::vector<std::string>& reference,
                                        const std::vector<std::string>& candidate) {
  std::vector<std::vector<int>> table(reference.size() + 1,
                                      std::vector<int>(candidate.size() + 1, 0));
  for (std::size_t i = 1; i <= reference.size(); ++i)
    for (std::size_t j = 1; j <= candidate.size(); ++j)
      table[i][j] = reference[i - 1] == candidate[j - 1]
                        ? table[i - 1][j - 1] + 1
                        : std::max(table[i - 1][j], table[i][j - 1]);
  return table;
}

/// lcs_ind (_backtrack_norec): the reference indices of one LCS. Which LCS (its tie-breaking)
/// matters for rougeLsum, whose union of LCSs depends on the indices chosen.
std::vector<std::size_t> lcs_reference_indices(const std::vector<std::string>& reference,
                                               const std::vector<std::string>& candidate) {
  const auto table = lcs_table(reference, candidate);
  std::vector<std::size_t> indices;
  std::size_t i = reference.size();
  std::size_t j = candidate.size();
  while (i > 0 && j > 0) {
    if (reference[i - 1] == candidate[j - 1]) {
      indices.push_back(i - 1);
      --i;
      --j;
    } else if (table[i][j - 1] > table[i - 1][j]) {
      --j;
    } else {
      --i;
    }
  }
  std::reverse(indices.begin(), indices.end());
  return indices;
}

/// _create_ngrams: n-gram counts, an n-gram keyed by its tokens joined with a space (tokens
/// never contain one).
std::unordered_map<std::string, int> ngram_counts(const std::vector<std::string>& tokens, int n) {
  std::unordered_map<std::string, int> counts;
  const auto order = static_cast<std::size_t>(n);
  for (std::size_t start = 0; start + order <= tokens.size(); ++start) {
    std::string key = tokens[start];
    for (std::size_t k = 1; k < order; ++k) key.append(" ").append(tokens[start + k]);
    ++counts[key];
  }
  return counts;
}

/// The n of "rougeN" (one digit, as rouge_score's `rouge[0-9]$`), or 0 for another name.
int rouge_n_order(const std::string& rouge_type) {
  if (rouge_type.size() == 6 && rouge_type.starts_with("rouge") && rouge_type[5] >= '0' &&
      rouge_type[5] <= '9')
    return rouge_type[5] - '0';
  return 0;
}

void check_rouge_types(const std::vector<std::string>& rouge_types) {
  for (const std::string& rouge_type : rouge_types)
    if (rouge_type != "rougeL" && rouge_type != "rougeLsum" && rouge_n_order(rouge_type) <= 0)
      throw std::invalid_argument("rouge: unknown ROUGE type \"" + rouge_type +
                                  "\" (expected rouge1..rouge9, rougeL or rougeLsum)");
}

}  // namespace

std::vector<std::string> rouge_tokenize(std::string_view text, bool use_stemmer) {
  const std::string lowered = python_lower(text);
  std::vector<std::string> tokens;
  for (std::size_t position = 0; position < lowered.size();) {
    if (!is_ascii_lower_alphanumeric(lowered[position])) {
      ++position;
      continue;
    }
    std::size_t end = position;
    while (end < lowered.size() && is_ascii_lower_alphanumeric(lowered[end])) ++end;
    std::string token = lowered.substr(position, end - position);
    // "Only stem words more than 3 characters long."
    if (use_stemmer && token.size() > 3) token = porter_stem(token);
    // rouge_score's last filter keeps tokens matching ^[a-z0-9]+$ (a stem always does).
    if (!token.empty() && std::all_of(token.begin(), token.end(), is_ascii_lower_alphanumeric))
      tokens.push_back(std::move(token));
    position = end;
  }
  return tokens;
}

RougeScore rouge_n(const std::vector<std::string>& prediction_tokens,
                   const std::vector<std::string>& reference_tokens, int n) {
  if (n <= 0) throw std::invalid_argument("rouge_n: n must be positive, got " + std::to_string(n));
  const auto reference_ngrams = ngram_counts(reference_tokens, n);
  const auto prediction_ngrams = ngram_counts(prediction_tokens, n);
  long long overlap = 0;
  long long reference_count = 0;
  long long prediction_count = 0;
  for (const auto& [ngram, count] : reference_ngrams) {
    reference_count += count;
    const auto found = prediction_ngrams.find(ngram);
    if (found != prediction_ngrams.end()) overlap += std::min(count, found->second);
  }
  for (const auto& [ngram, count] : prediction_ngrams) prediction_count += count;
  return score_from_counts(static_cast<double>(overlap),
                           static_cast<double>(std::max(prediction_count, 1LL)),
                           static_cast<double>(std::max(reference_count, 1LL)));
}

RougeScore rouge_l(const std::vector<std::string>& prediction_tokens,
                   const std::vector<std::string>& reference_tokens) {
  if (prediction_tokens.empty() || reference_tokens.empty()) return {};
  const int lcs_length = lcs_table(reference_tokens, prediction_tokens).back().back();
  return score_from_counts(lcs_length, static_cast<double>(prediction_tokens.size()),
                           static_cast<double>(reference_tokens.size()));
}

RougeScore rouge_lsum(const std::vector<std::vector<std::string>>& prediction_sentences,
                      const std::vector<std::vector<std::string>>& reference_sentences) {
  if (prediction_sentences.empty() || reference_sentences.empty()) return {};
  std::unordered_map<std::string, long long> prediction_token_counts;
  std::unordered_map<std::string, long long> reference_token_counts;
  std::size_t prediction_length = 0;
  std::size_t reference_length = 0;
  for (const auto& sentence : prediction_sentences) {
    prediction_length += sentence.size();
    for (const std::string& token : sentence) ++prediction_token_counts[token];
  }
  for (const auto& sentence : reference_sentences) {
    reference_length += sentence.size();
    for (const std::string& token : sentence) ++reference_token_counts[token];
  }
  if (prediction_length == 0 || reference_length == 0) return {};

  long long hits = 0;
  for (const auto& reference_sentence : reference_sentences) {
    // _union_lcs: the sorted union of the reference indices of each sentence pair's LCS.
    std::set<std::size_t> union_indices;
    for (const auto& prediction_sentence : prediction_sentences)
      for (const std::size_t index : lcs_reference_indices(reference_sentence, prediction_sentence))
        union_indices.insert(index);
    for (const std::size_t index : union_indices) {
      const std::string& token = reference_sentence[index];
      long long& left_in_prediction = prediction_token_counts[token];
      long long& left_in_reference = reference_token_counts[token];
      if (left_in_prediction > 0 && left_in_reference > 0) {
        ++hits;
        --left_in_prediction;
        --left_in_reference;
      }
    }
  }
  return score_from_counts(static_cast<double>(hits), static_cast<double>(prediction_length),
                           static_cast<double>(reference_length));
}

std::vector<std::vector<std::string>> rouge_lsum_sentences(std::string_view text,
                                                           bool use_stemmer) {
  std::vector<std::vector<std::string>> sentences;
  std::size_t line_start = 0;
  while (line_start <= text.size()) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    if (line_end > line_start)
      sentences.push_back(
          rouge_tokenize(text.substr(line_start, line_end - line_start), use_stemmer));
    line_start = line_end + 1;
  }
  return sentences;
}

std::map<std::string, RougeScore> rouge_scores(std::string_view prediction,
                                               std::string_view reference, bool use_stemmer,
                                               const std::vector<std::string>& rouge_types) {
  check_rouge_types(rouge_types);
  const auto prediction_tokens = rouge_tokenize(prediction, use_stemmer);
  const auto reference_tokens = rouge_tokenize(reference, use_stemmer);
  std::map<std::string, RougeScore> scores;
  for (const std::string& rouge_type : rouge_types) {
    if (rouge_type == "rougeL") {
      scores[rouge_type] = rouge_l(prediction_tokens, reference_tokens);
    } else if (rouge_type == "rougeLsum") {
      scores[rouge_type] = rouge_lsum(rouge_lsum_sentences(prediction, use_stemmer),
                                      rouge_lsum_sentences(reference, use_stemmer));
    } else {
      scores[rouge_type] = rouge_n(prediction_tokens, reference_tokens, rouge_n_order(rouge_type));
    }
  }
  return scores;
}

std::map<std::string, double> rouge_corpus(const std::vector<std::string>& predictions,
                                           const std::vector<std::string>& references,
                                           bool use_stemmer,
                                           const std::vector<std::string>& rouge_types) {
  if (predictions.size() != references.size())
    throw std::invalid_argument("rouge_corpus: " + std::to_string(predictions.size()) +
                                " predictions but " + std::to_string(references.size()) +
                                " references; they must pair up one to one");
  if (predictions.empty())
    throw std::invalid_argument("rouge_corpus: no predictions (the mean of nothing is undefined)");
  std::map<std::string, double> sums;
  for (const std::string& rouge_type : rouge_types) sums[rouge_type] = 0.0;
  for (std::size_t i = 0; i < predictions.size(); ++i)
    for (const auto& [rouge_type, score] :
         rouge_scores(predictions[i], references[i], use_stemmer, rouge_types))
      sums[rouge_type] += score.fmeasure;
  for (auto& [rouge_type, sum] : sums) sum /= static_cast<double>(predictions.size());
  return sums;
}

}  // namespace ctrainer::text_metrics
