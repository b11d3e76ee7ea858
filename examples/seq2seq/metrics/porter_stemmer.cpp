// The steps follow nltk/stem/porter.py (NLTK_EXTENSIONS mode) rule for rule and in its order:
// which rule of a list applies first, and that a matching suffix whose condition fails ends the
// list, both change results.
#include <ctrainer/examples/seq2seq/metrics/porter_stemmer.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

namespace ctrainer::text_metrics {
namespace {

using StemCondition = std::function<bool(std::string_view stem)>;

/// One suffix rule of nltk's `_apply_rule_list`: `suffix` replaced by `replacement` when
/// `condition` (if any) holds for what precedes the suffix. `double_consonant` is nltk's "*d"
/// pseudo-suffix: the word ends in a doubled consonant, both letters removed.
struct SuffixRule {
  std::string_view suffix;
  std::string replacement;
  StemCondition condition;
  bool double_consonant = false;
};

bool is_vowel_letter(char letter) {
  return letter == 'a' || letter == 'e' || letter == 'i' || letter == 'o' || letter == 'u';
}

/// 'c' or 'v' per letter: a consonant is a letter other than a, e, i, o, u and other than a "y"
/// preceded by a consonant (a "y" that starts the word is a consonant).
std::string consonant_vowel_pattern(std::string_view word) {
  std::string pattern(word.size(), 'c');
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (is_vowel_letter(word[i]))
      pattern[i] = 'v';
    else if (word[i] == 'y')
      pattern[i] = (i == 0 || pattern[i - 1] == 'v') ? 'c' : 'v';
  }
  return pattern;
}

bool is_consonant(std::string_view word, std::size_t index) {
  return consonant_vowel_pattern(word.substr(0, index + 1))[index] == 'c';
}

/// Porter's m: the number of vowel-run / consonant-run pairs, [C](VC){m}[V].
int measure(std::string_view stem) {
  const std::string pattern = consonant_vowel_pattern(stem);
  int vowel_consonant_pairs = 0;
  for (std::size_t i = 1; i < pattern.size(); ++i)
    if (pattern[i - 1] == 'v' && pattern[i] == 'c') ++vowel_consonant_pairs;
  return vowel_consonant_pairs;
}

bool has_positive_measure(std::string_view stem) {
  return measure(stem) > 0;
}

bool contains_vowel(std::string_view stem) {
  return consonant_vowel_pattern(stem).find('v') != std::string::npos;
}

/// Porter's *d.
bool ends_double_consonant(std::string_view word) {
  return word.size() >= 2 && word[word.size() - 1] == word[word.size() - 2] &&
         is_consonant(word, word.size() - 1);
}

/// Porter's *o: ends consonant-vowel-consonant, the last not w, x or y; NLTK adds two-letter
/// words that are vowel-consonant.
bool ends_cvc(std::string_view word) {
  const std::size_t n = word.size();
  if (n >= 3 && is_consonant(word, n - 3) && !is_consonant(word, n - 2) &&
      is_consonant(word, n - 1) && word[n - 1] != 'w' && word[n - 1] != 'x' && word[n - 1] != 'y')
    return true;
  return n == 2 && !is_consonant(word, 0) && is_consonant(word, 1);
}

bool ends_with(std::string_view word, std::string_view suffix) {
  return word.size() >= suffix.size() && word.substr(word.size() - suffix.size()) == suffix;
}

std::string without_suffix(std::string_view word, std::size_t suffix_length) {
  return std::string(word.substr(0, word.size() - suffix_length));
}

/// nltk's `_apply_rule_list`: the first rule whose suffix matches decides; its condition failing
/// leaves the word unchanged (later rules are not tried).
std::string apply_first_matching_rule(const std::string& word,
                                      const std::vector<SuffixRule>& rules) {
  for (const SuffixRule& rule : rules) {
    if (rule.double_consonant) {
      if (!ends_double_consonant(word)) continue;
      const std::string stem = without_suffix(word, 2);
      if (!rule.condition || rule.condition(stem)) return stem + rule.replacement;
      return word;
    }
    if (ends_with(word, rule.suffix)) {
      const std::string stem = without_suffix(word, rule.suffix.size());
      if (!rule.condition || rule.condition(stem)) return stem + rule.replacement;
      return word;
    }
  }
  return word;
}

std::vector<SuffixRule> rules_with_condition(
    std::initializer_list<std::pair<std::string_view, std::string_view>> suffixes,
    const StemCondition& condition) {
  std::vector<SuffixRule> rules;
  for (const auto& [suffix, replacement] : suffixes)
    rules.push_back({suffix, std::string(replacement), condition});
  return rules;
}

std::string step1a(const std::string& word) {
  // NLTK: "dies" -> "die" (but "flies" -> "fli").
  if (ends_with(word, "ies") && word.size() == 4) return without_suffix(word, 3) + "ie";
  return apply_first_matching_rule(
      word,
      {{"sses", "ss", nullptr}, {"ies", "i", nullptr}, {"ss", "ss", nullptr}, {"s", "", nullptr}});
}

std::string step1b(const std::string& word) {
  // NLTK: "died" -> "die", "spied" -> "spi".
  if (ends_with(word, "ied")) return without_suffix(word, 3) + (word.size() == 4 ? "ie" : "i");
  if (ends_with(word, "eed")) {
    const std::string stem = without_suffix(word, 3);
    return measure(stem) > 0 ? stem + "ee" : word;
  }
  std::string intermediate_stem;
  bool removed_ed_or_ing = false;
  for (const std::string_view suffix : {std::string_view("ed"), std::string_view("ing")}) {
    if (!ends_with(word, suffix)) continue;
    intermediate_stem = without_suffix(word, suffix.size());
    if (contains_vowel(intermediate_stem)) {
      removed_ed_or_ing = true;
      break;
    }
  }
  if (!removed_ed_or_ing) return word;
  const char last_letter = intermediate_stem.back();
  return apply_first_matching_rule(
      intermediate_stem,
      {{"at", "ate", nullptr},
       {"bl", "ble", nullptr},
       {"iz", "ize", nullptr},
       {"", std::string(1, last_letter),
        [last_letter](std::string_view) {
          return last_letter != 'l' && last_letter != 's' && last_letter != 'z';
        },
        /*double_consonant=*/true},
       {"", "e", [](std::string_view stem) { return measure(stem) == 1 && ends_cvc(stem); }}});
}

std::string step1c(const std::string& word) {
  // NLTK: "y" -> "i" only after a consonant that is not the whole stem ("happy" -> "happi",
  // "enjoy" and "by" unchanged).
  return apply_first_matching_rule(word, {{"y", "i", [](std::string_view stem) {
                                             return stem.size() > 1 &&
                                                    is_consonant(stem, stem.size() - 1);
                                           }}});
}

std::string step2(const std::string& word) {
  // NLTK applies "alli" -> "al" first and runs the result through step 2 again.
  if (ends_with(word, "alli") && has_positive_measure(without_suffix(word, 4)))
    return step2(without_suffix(word, 4) + "al");
  std::vector<SuffixRule> rules = rules_with_condition(
      {{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"},   {"anci", "ance"},
       {"izer", "ize"},    {"bli", "ble"},     {"alli", "al"},     {"entli", "ent"},
       {"eli", "e"},       {"ousli", "ous"},   {"ization", "ize"}, {"ation", "ate"},
       {"ator", "ate"},    {"alism", "al"},    {"iveness", "ive"}, {"fulness", "ful"},
       {"ousness", "ous"}, {"aliti", "al"},    {"iviti", "ive"},   {"biliti", "ble"},
       {"fulli", "ful"}},
      has_positive_measure);
  // "logi" -> "log" keeps the "l" in the stem it measures, so "geologi" and "theologi" conflate.
  const std::string word_before_ogi = without_suffix(word, std::min<std::size_t>(3, word.size()));
  rules.push_back({"logi", "log", [word_before_ogi](std::string_view) {
                     return has_positive_measure(word_before_ogi);
                   }});
  return apply_first_matching_rule(word, rules);
}

std::string step3(const std::string& word) {
  return apply_first_matching_rule(word, rules_with_condition({{"icate", "ic"},
                                                               {"ative", ""},
                                                               {"alize", "al"},
                                                               {"iciti", "ic"},
                                                               {"ical", "ic"},
                                                               {"ful", ""},
                                                               {"ness", ""}},
                                                              has_positive_measure));
}

std::string step4(const std::string& word) {
  const StemCondition measure_above_one = [](std::string_view stem) { return measure(stem) > 1; };
  std::vector<SuffixRule> rules = rules_with_condition({{"al", ""},
                                                        {"ance", ""},
                                                        {"ence", ""},
                                                        {"er", ""},
                                                        {"ic", ""},
                                                        {"able", ""},
                                                        {"ible", ""},
                                                        {"ant", ""},
                                                        {"ement", ""},
                                                        {"ment", ""},
                                                        {"ent", ""}},
                                                       measure_above_one);
  rules.push_back({"ion", "", [](std::string_view stem) {
                     return measure(stem) > 1 && (stem.back() == 's' || stem.back() == 't');
                   }});
  for (const std::string_view suffix : {"ou", "ism", "ate", "iti", "ous", "ive", "ize"})
    rules.push_back({suffix, "", measure_above_one});
  return apply_first_matching_rule(word, rules);
}

std::string step5a(const std::string& word) {
  // Both conditions are tried for the same suffix, so not through apply_first_matching_rule.
  if (!ends_with(word, "e")) return word;
  const std::string stem = without_suffix(word, 1);
  if (measure(stem) > 1) return stem;
  if (measure(stem) == 1 && !ends_cvc(stem)) return stem;
  return word;
}

std::string step5b(const std::string& word) {
  const std::string word_before_last_letter = without_suffix(word, word.empty() ? 0 : 1);
  return apply_first_matching_rule(
      word, {{"ll", "l", [&](std::string_view) { return measure(word_before_last_letter) > 1; }}});
}

/// NLTK's table of irregular forms, looked up before any step.
std::string_view irregular_form(std::string_view word) {
  static const std::pair<std::string_view, std::string_view> kIrregularForms[] = {
      {"sky", "sky"},        {"skies", "sky"},        {"dying", "die"},
      {"lying", "lie"},      {"tying", "tie"},        {"news", "news"},
      {"innings", "inning"}, {"inning", "inning"},    {"outings", "outing"},
      {"outing", "outing"},  {"cannings", "canning"}, {"canning", "canning"},
      {"howe", "howe"},      {"proceed", "proceed"},  {"exceed", "exceed"},
      {"succeed", "succeed"}};
  for (const auto& [form, stem] : kIrregularForms)
    if (form == word) return stem;
  return {};
}

}  // namespace

std::string porter_stem(std::string_view word) {
  std::string stem(word);
  for (char& letter : stem)
    if (letter >= 'A' && letter <= 'Z') letter = static_cast<char>(letter + ('a' - 'A'));
  if (const std::string_view irregular = irregular_form(stem); !irregular.empty())
    return std::string(irregular);
  if (word.size() <= 2) return stem;
  stem = step1a(stem);
  stem = step1b(stem);
  stem = step1c(stem);
  stem = step2(stem);
  stem = step3(stem);
  stem = step4(stem);
  stem = step5a(stem);
  stem = step5b(stem);
  return stem;
}

}  // namespace ctrainer::text_metrics
