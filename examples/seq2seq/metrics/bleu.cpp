// Mirrors sacrebleu/metrics/bleu.py, tokenizers/tokenizer_13a.py and tokenizer_re.py. The score
// is the same double operations in the same order as sacreBLEU's compute_bleu, so it is equal to
// the bit (sacreBLEU 2.6 on Python 3.11, whose sum() adds floats left to right).
#include <ctrainer/examples/seq2seq/metrics/bleu.h>

#include <ctrainer/examples/seq2seq/metrics/python_text.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

namespace ctrainer::text_metrics {
namespace {

/// sacreBLEU's my_log: log, with log(0) floored to a large negative number (so a zero precision
/// gives a score of 0 rather than a domain error).
double floored_log(double value) {
  if (value == 0.0) return -9999999999.0;
  return std::log(value);
}

/// Python's `text.replace(from, to)`: non-overlapping occurrences, left to right, the
/// replacements not scanned again.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  std::size_t position = 0;
  while (true) {
    const std::size_t found = text.find(from, position);
    if (found == std::string_view::npos) break;
    out.append(text.substr(position, found - position)).append(to);
    position = found + from.size();
  }
  out.append(text.substr(position));
  return out;
}

bool is_ascii_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_period_or_comma(char c) {
  return c == '.' || c == ',';
}

/// The first regex of TokenizerRegexp, [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII punctuation and symbols
/// except ' , - . (and the space, which it pads harmlessly).
bool is_split_off_symbol(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

/// `re.sub` of a two-character pattern (first, second) with `replace`: Python scans left to
/// right and resumes after each match, so a character consumed by one match cannot start the
/// next. Byte-wise equals code-point-wise here: both characters of every pattern that can match
/// inside a multi-byte character are ASCII, so a match never splits one.
template <typename FirstMatches, typename SecondMatches, typename Replace>
std::string substitute_pairs(const std::string& text, FirstMatches first, SecondMatches second,
                             Replace replace) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  std::size_t position = 0;
  while (position < text.size()) {
    if (position + 1 < text.size() && first(text[position]) && second(text[position + 1])) {
      replace(out, text[position], text[position + 1]);
      position += 2;
    } else {
      out.push_back(text[position]);
      ++position;
    }
  }
  return out;
}

std::string join_words(const std::vector<std::string_view>& words) {
  std::string joined;
  for (const std::string_view word : words) {
    if (!joined.empty()) joined.push_back(' ');
    joined.append(word);
  }
  return joined;
}

/// BLEU._preprocess_segment: optional lower-casing, rstrip, tokenizer.
std::string preprocess_segment(std::string_view segment, const BleuOptions& options) {
  std::string text = options.lowercase ? python_lower(segment) : std::string(segment);
  const std::string_view stripped = python_rstrip(text);
  if (options.tokenize == BleuTokenizer::kNone) return std::string(stripped);
  return tokenize_13a(stripped);
}

/// extract_all_word_ngrams: counts of every n-gram of orders 1..max_order (keyed by the tokens
/// joined with a space, which no token contains) and the token count.
struct SegmentNgrams {
  std::unordered_map<std::string, std::int64_t> counts;
  std::int64_t length = 0;
};

SegmentNgrams word_ngrams(std::string_view line, int max_order) {
  const std::vector<std::string_view> tokens = python_split(line);
  SegmentNgrams ngrams;
  ngrams.length = static_cast<std::int64_t>(tokens.size());
  for (std::size_t order = 1; order <= static_cast<std::size_t>(max_order); ++order) {
    for (std::size_t start = 0; start + order <= tokens.size(); ++start) {
      std::string key(tokens[start]);
      for (std::size_t k = 1; k < order; ++k) key.append(" ").append(tokens[start + k]);
      ++ngrams.counts[key];
    }
  }
  return ngrams;
}

std::size_t ngram_order(const std::string& key) {
  return static_cast<std::size_t>(std::count(key.begin(), key.end(), ' ')) + 1;
}

/// BLEU._get_closest_ref_len: the reference length nearest the hypothesis's, the shorter on a tie.
std::int64_t closest_reference_length(std::int64_t hypothesis_length,
                                      const std::vector<std::int64_t>& reference_lengths) {
  std::int64_t closest_difference = -1;
  std::int64_t closest_length = -1;
  for (const std::int64_t reference_length : reference_lengths) {
    const std::int64_t difference = std::llabs(hypothesis_length - reference_length);
    if (closest_difference == -1 || difference < closest_difference) {
      closest_difference = difference;
      closest_length = reference_length;
    } else if (difference == closest_difference && reference_length < closest_length) {
      closest_length = reference_length;
    }
  }
  return closest_length;
}

/// BLEU.compute_bleu on the corpus statistics.
BleuScore compute_bleu(BleuScore statistics, const BleuOptions& options) {
  BleuScore result = std::move(statistics);
  const auto max_order = static_cast<std::size_t>(options.max_ngram_order);
  double smooth_value = 0.0;
  if (options.smooth_method == BleuSmoothing::kFloor)
    smooth_value = options.smooth_value.value_or(0.1);
  if (options.smooth_method == BleuSmoothing::kAddK)
    smooth_value = options.smooth_value.value_or(1.0);

  result.bp = 1.0;
  if (result.sys_len < result.ref_len)
    result.bp = result.sys_len > 0 ? std::exp(1.0 - static_cast<double>(result.ref_len) /
                                                        static_cast<double>(result.sys_len))
                                   : 0.0;
  result.precisions.assign(max_order, 0.0);
  result.score = 0.0;
  if (std::all_of(result.counts.begin(), result.counts.end(),
                  [](std::int64_t count) { return count == 0; }))
    return result;

  double smooth_mteval = 1.0;
  std::size_t effective_order = max_order;
  for (std::size_t n = 1; n <= max_order; ++n) {
    double correct = static_cast<double>(result.counts[n - 1]);
    double total = static_cast<double>(result.totals[n - 1]);
    if (options.smooth_method == BleuSmoothing::kAddK && n > 1) {
      correct += smooth_value;
      total += smooth_value;
    }
    if (total == 0) break;
    if (options.use_effective_order) effective_order = n;
    if (correct == 0) {
      if (options.smooth_method == BleuSmoothing::kExp) {
        smooth_mteval *= 2;
        result.precisions[n - 1] = 100. / (smooth_mteval * total);
      } else if (options.smooth_method == BleuSmoothing::kFloor) {
        result.precisions[n - 1] = 100. * smooth_value / total;
      }
    } else {
      result.precisions[n - 1] = 100. * correct / total;
    }
  }
  double log_sum = 0.0;
  for (std::size_t n = 0; n < effective_order; ++n) log_sum += floored_log(result.precisions[n]);
  result.score = result.bp * std::exp(log_sum / static_cast<double>(effective_order));
  return result;
}

}  // namespace

std::string tokenize_13a(std::string_view line) {
  // Tokenizer13a: the language-independent part.
  std::string text = replace_all(line, "<skipped>", "");
  text = replace_all(text, "-\n", "");
  text = replace_all(text, "\n", " ");
  if (text.find('&') != std::string::npos) {
    text = replace_all(text, "&quot;", "\"");
    text = replace_all(text, "&amp;", "&");
    text = replace_all(text, "&lt;", "<");
    text = replace_all(text, "&gt;", ">");
  }
  // TokenizerRegexp on " line ".
  std::string spaced;
  spaced.reserve(text.size() * 2 + 2);
  spaced.push_back(' ');
  for (const char c : text) {
    if (is_split_off_symbol(c)) {
      spaced.push_back(' ');
      spaced.push_back(c);
      spaced.push_back(' ');
    } else {
      spaced.push_back(c);
    }
  }
  spaced.append(" ");
  // Period and comma unless preceded by a digit: ([^0-9])([\.,]) -> "\1 \2 ".
  spaced = substitute_pairs(
      spaced, [](char c) { return !is_ascii_digit(c); }, is_period_or_comma,
      [](std::string& out, char first, char second) {
        out.push_back(first);
        out.push_back(' ');
        out.push_back(second);
        out.push_back(' ');
      });
  // Period and comma unless followed by a digit: ([\.,])([^0-9]) -> " \1 \2".
  spaced = substitute_pairs(
      spaced, is_period_or_comma, [](char c) { return !is_ascii_digit(c); },
      [](std::string& out, char first, char second) {
        out.push_back(' ');
        out.push_back(first);
        out.push_back(' ');
        out.push_back(second);
      });
  // Dash when preceded by a digit: ([0-9])(-) -> "\1 \2 ".
  spaced = substitute_pairs(
      spaced, is_ascii_digit, [](char c) { return c == '-'; },
      [](std::string& out, char first, char second) {
        out.push_back(first);
        out.push_back(' ');
        out.push_back(second);
        out.push_back(' ');
      });
  return join_words(python_split(spaced));
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& reference_streams,
                      const BleuOptions& options) {
  if (reference_streams.empty())
    throw std::invalid_argument("corpus_bleu: no reference stream (pass {references} for one)");
  for (std::size_t stream = 0; stream < reference_streams.size(); ++stream)
    if (reference_streams[stream].size() != hypotheses.size())
      throw std::invalid_argument(
          "corpus_bleu: " + std::to_string(hypotheses.size()) + " hypotheses but " +
          std::to_string(reference_streams[stream].size()) + " references in reference stream " +
          std::to_string(stream) + "; each stream needs one reference per hypothesis");
  if (hypotheses.empty()) throw std::invalid_argument("corpus_bleu: no hypotheses");
  if (options.max_ngram_order < 1)
    throw std::invalid_argument("corpus_bleu: max_ngram_order must be at least 1");

  const auto max_order = static_cast<std::size_t>(options.max_ngram_order);
  BleuScore statistics;
  statistics.counts.assign(max_order, 0);
  statistics.totals.assign(max_order, 0);
  for (std::size_t segment = 0; segment < hypotheses.size(); ++segment) {
    // _extract_reference_info: per n-gram the largest count in any one reference.
    std::unordered_map<std::string, std::int64_t> reference_counts;
    std::vector<std::int64_t> reference_lengths;
    for (const auto& stream : reference_streams) {
      const SegmentNgrams reference =
          word_ngrams(preprocess_segment(stream[segment], options), options.max_ngram_order);
      reference_lengths.push_back(reference.length);
      for (const auto& [ngram, count] : reference.counts) {
        std::int64_t& best = reference_counts[ngram];
        best = std::max(best, count);
      }
    }
    // _compute_segment_statistics.
    const SegmentNgrams hypothesis =
        word_ngrams(preprocess_segment(hypotheses[segment], options), options.max_ngram_order);
    statistics.sys_len += hypothesis.length;
    statistics.ref_len += closest_reference_length(hypothesis.length, reference_lengths);
    for (const auto& [ngram, count] : hypothesis.counts) {
      const std::size_t order = ngram_order(ngram);
      statistics.totals[order - 1] += count;
      const auto found = reference_counts.find(ngram);
      if (found != reference_counts.end())
        statistics.counts[order - 1] += std::min(count, found->second);
    }
  }
  return compute_bleu(std::move(statistics), options);
}

}  // namespace ctrainer::text_metrics
