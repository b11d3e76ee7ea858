// Mirrors sacrebleu/metrics/chrf.py and helpers.py. Python slices strings by code point, so the
// character n-grams are taken over decoded code points, not UTF-8 bytes.
#include <ctrainer/examples/seq2seq/metrics/chrf.h>

#include <ctrainer/examples/seq2seq/metrics/python_text.h>

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace ctrainer::text_metrics {
namespace {

/// One order's n-gram counts. Word n-grams are keyed by their words joined with a space (as
/// sacreBLEU's extract_word_ngrams), decoded like the character n-grams so one type holds both.
using NgramCounts = std::unordered_map<std::u32string, std::int64_t>;

/// CHRF._PUNCTS: Python's string.punctuation.
bool is_ascii_punctuation(char c) {
  return std::string_view(R"(!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~)").find(c) != std::string_view::npos;
}

/// CHRF._remove_punctuation: whitespace-split words, one punctuation character split off the end
/// of a longer word, or else off its start. (A word of one code point is kept whole; checking its
/// bytes is enough, since a multi-byte character neither starts nor ends with an ASCII byte.)
std::vector<std::string_view> words_without_edge_punctuation(std::string_view sentence) {
  std::vector<std::string_view> words;
  for (const std::string_view word : python_split(sentence)) {
    if (word.size() == 1) {
      words.push_back(word);
    } else if (is_ascii_punctuation(word.back())) {
      words.push_back(word.substr(0, word.size() - 1));
      words.push_back(word.substr(word.size() - 1));
    } else if (is_ascii_punctuation(word.front())) {
      words.push_back(word.substr(0, 1));
      words.push_back(word.substr(1));
    } else {
      words.push_back(word);
    }
  }
  return words;
}

/// extract_all_char_ngrams, then extract_word_ngrams for each word order: one counter per order.
std::vector<NgramCounts> segment_ngrams(std::string_view sentence, const ChrfOptions& options) {
  std::vector<NgramCounts> orders;
  std::u32string characters = decode_utf8(sentence);
  if (!options.whitespace) std::erase_if(characters, is_python_whitespace);
  for (std::size_t n = 1; n <= static_cast<std::size_t>(options.char_order); ++n) {
    NgramCounts& counts = orders.emplace_back();
    for (std::size_t start = 0; start + n <= characters.size(); ++start)
      ++counts[characters.substr(start, n)];
  }
  if (options.word_order > 0) {
    std::vector<std::u32string> words;
    for (const std::string_view word : words_without_edge_punctuation(sentence))
      words.push_back(decode_utf8(word));
    for (std::size_t n = 1; n <= static_cast<std::size_t>(options.word_order); ++n) {
      NgramCounts& counts = orders.emplace_back();
      for (std::size_t start = 0; start + n <= words.size(); ++start) {
        std::u32string key = words[start];
        for (std::size_t k = 1; k < n; ++k) key.append(U" ").append(words[start + k]);
        ++counts[key];
      }
    }
  }
  return orders;
}

/// CHRF._get_match_statistics: [hypothesis n-grams, reference n-grams, clipped matches]; the
/// hypothesis count is 0 when the reference has no n-gram of the order (sacreBLEU's rule).
void append_match_statistics(const NgramCounts& hypothesis, const NgramCounts& reference,
                             std::vector<std::int64_t>& statistics) {
  std::int64_t hypothesis_count = 0;
  std::int64_t match_count = 0;
  for (const auto& [ngram, count] : hypothesis) {
    hypothesis_count += count;
    const auto found = reference.find(ngram);
    if (found != reference.end()) match_count += std::min(count, found->second);
  }
  std::int64_t reference_count = 0;
  for (const auto& [ngram, count] : reference) reference_count += count;
  statistics.push_back(reference.empty() ? 0 : hypothesis_count);
  statistics.push_back(reference_count);
  statistics.push_back(match_count);
}

/// CHRF._compute_f_score, operation for operation.
double f_score(const std::vector<std::int64_t>& statistics, const ChrfOptions& options) {
  constexpr double kEps = 1e-16;
  const std::size_t order = static_cast<std::size_t>(options.char_order + options.word_order);
  const double factor = options.beta * options.beta;
  double score = 0.0;
  int effective_order = 0;
  double average_precision = 0.0;
  double average_recall = 0.0;
  for (std::size_t i = 0; i < order; ++i) {
    const std::int64_t hypothesis_count = statistics[3 * i];
    const std::int64_t reference_count = statistics[3 * i + 1];
    const auto matches = static_cast<double>(statistics[3 * i + 2]);
    const double precision =
        hypothesis_count > 0 ? matches / static_cast<double>(hypothesis_count) : kEps;
    const double recall =
        reference_count > 0 ? matches / static_cast<double>(reference_count) : kEps;
    const double denominator = factor * precision + recall;
    score += denominator > 0 ? (1 + factor) * precision * recall / denominator : kEps;
    if (hypothesis_count > 0 && reference_count > 0) {
      average_precision += precision;
      average_recall += recall;
      ++effective_order;
    }
  }
  if (options.eps_smoothing) return 100 * score / static_cast<double>(order);
  if (effective_order == 0) {
    average_precision = average_recall = 0.0;
  } else {
    average_precision /= effective_order;
    average_recall /= effective_order;
  }
  if (average_precision + average_recall == 0.0) return 0.0;
  score = (1 + factor) * average_precision * average_recall;
  score /= (factor * average_precision) + average_recall;
  return 100 * score;
}

}  // namespace

ChrfScore corpus_chrf(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& reference_streams,
                      const ChrfOptions& options) {
  if (reference_streams.empty())
    throw std::invalid_argument("corpus_chrf: no reference stream (pass {references} for one)");
  for (std::size_t stream = 0; stream < reference_streams.size(); ++stream)
    if (reference_streams[stream].size() != hypotheses.size())
      throw std::invalid_argument(
          "corpus_chrf: " + std::to_string(hypotheses.size()) + " hypotheses but " +
          std::to_string(reference_streams[stream].size()) + " references in reference stream " +
          std::to_string(stream) + "; each stream needs one reference per hypothesis");
  if (hypotheses.empty()) throw std::invalid_argument("corpus_chrf: no hypotheses");
  if (options.char_order < 0 || options.word_order < 0 ||
      options.char_order + options.word_order == 0)
    throw std::invalid_argument("corpus_chrf: char_order + word_order must be positive");

  const auto preprocess = [&](const std::string& segment) {
    return options.lowercase ? python_lower(segment) : segment;
  };
  ChrfScore result;
  result.statistics.assign(3 * static_cast<std::size_t>(options.char_order + options.word_order),
                           0);
  for (std::size_t segment = 0; segment < hypotheses.size(); ++segment) {
    const auto hypothesis = segment_ngrams(preprocess(hypotheses[segment]), options);
    // _compute_segment_statistics: the reference with the best segment chrF, the first on a tie.
    std::vector<std::int64_t> best_statistics;
    double best_f_score = -1.0;
    for (const auto& stream : reference_streams) {
      const auto reference = segment_ngrams(preprocess(stream[segment]), options);
      std::vector<std::int64_t> statistics;
      for (std::size_t order = 0; order < hypothesis.size(); ++order)
        append_match_statistics(hypothesis[order], reference[order], statistics);
      const double segment_f_score = f_score(statistics, options);
      if (segment_f_score > best_f_score) {
        best_f_score = segment_f_score;
        best_statistics = std::move(statistics);
      }
    }
    for (std::size_t i = 0; i < best_statistics.size(); ++i)
      result.statistics[i] += best_statistics[i];
  }
  result.score = f_score(result.statistics, options);
  return result;
}

}  // namespace ctrainer::text_metrics
