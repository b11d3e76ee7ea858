#include <ctrainer/models/tokenizers/wordpiece/basic_tokenizer.h>

#include <utf8proc.h>

#include <algorithm>

#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer {

namespace {

constexpr char32_t kCapitalIWithDot = 0x130;  // lower-cases to two code points: i + U+0307
constexpr char32_t kCombiningDotAbove = 0x307;

bool is_word_separator(char32_t cp) {
  // After cleaning, every whitespace character is a space except the line and paragraph
  // separators (categories Zl/Zp), on which Python's str.split() still splits.
  return cp == ' ' || cp == 0x2028 || cp == 0x2029;
}

/// Lower-casing of one word into `out`, one code point at a time with the full (unconditional)
/// mappings, as the Rust tokenizers' BertNormalizer does (char::to_lowercase): U+0130 becomes
/// i + U+0307, and capital sigma always becomes small sigma, without Python's final-sigma rule.
void lower_case(const char32_t* word, size_t size, std::u32string& out) {
  out.clear();
  for (size_t i = 0; i < size; ++i) {
    const char32_t cp = word[i];
    if (cp < 0x80) {
      out.push_back(cp >= 'A' && cp <= 'Z' ? cp + ('a' - 'A') : cp);
    } else if (cp == kCapitalIWithDot) {
      out.push_back('i');
      out.push_back(kCombiningDotAbove);
    } else {
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
    }
  }
}

/// NFD (canonical decomposition + canonical ordering) of `word`, then drops nonspacing marks.
void strip_accents(std::u32string& word) {
  if (std::all_of(word.begin(), word.end(), [](char32_t c) { return c < 0x80; })) return;
  thread_local std::u32string nfd;
  nfd.clear();
  utf8proc_int32_t buf[16];
  for (char32_t cp : word) {
    if (cp < 0x80) {
      nfd.push_back(cp);
      continue;
    }
    int last_boundclass = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 16,
                                                 UTF8PROC_DECOMPOSE, &last_boundclass);
    if (n <= 0 || n > 16) {  // cannot happen for valid code points; keep the character
      nfd.push_back(cp);
      continue;
    }
    for (utf8proc_ssize_t k = 0; k < n; ++k) nfd.push_back(static_cast<char32_t>(buf[k]));
  }
  // Canonical ordering: stable sort of each run of combining marks by combining class.
  auto ccc = [](char32_t c) {
    return c < 0x300 ? 0 : utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
  };
  for (size_t i = 0; i < nfd.size();) {
    if (ccc(nfd[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < nfd.size() && ccc(nfd[j]) != 0) ++j;
    std::stable_sort(nfd.begin() + static_cast<std::ptrdiff_t>(i),
                     nfd.begin() + static_cast<std::ptrdiff_t>(j),
                     [&](char32_t a, char32_t b) { return ccc(a) < ccc(b); });
    i = j;
  }
  word.clear();
  for (char32_t cp : nfd)
    if (!unicode::is_nonspacing_mark(cp)) word.push_back(cp);
}

}  // namespace

void WordList::append(char32_t cp) {
  unicode::append_utf8(cp, text_);
}

BasicTokenizer::BasicTokenizer(BasicTokenizerOptions options)
    : options_(std::move(options)),
      strip_accents_(options_.strip_accents.value_or(options_.do_lower_case)),
      never_split_(options_.never_split.begin(), options_.never_split.end()) {}

void BasicTokenizer::tokenize(std::string_view text, WordList& out) const {
  out.clear();
  thread_local std::u32string decoded;
  thread_local std::u32string cleaned;
  thread_local std::u32string word;
  thread_local std::string word_utf8;
  decoded.clear();
  unicode::decode_utf8(text, decoded);

  cleaned.clear();
  for (char32_t cp : decoded) {
    if (cp == 0 || cp == 0xFFFD || unicode::is_control(cp)) continue;
    if (unicode::is_whitespace(cp)) {
      cleaned.push_back(' ');
    } else if (options_.tokenize_chinese_chars && unicode::is_cjk_ideograph(cp)) {
      cleaned.push_back(' ');
      cleaned.push_back(cp);
      cleaned.push_back(' ');
    } else {
      cleaned.push_back(cp);
    }
  }

  const size_t n = cleaned.size();
  size_t i = 0;
  while (i < n) {
    while (i < n && is_word_separator(cleaned[i])) ++i;
    const size_t begin = i;
    while (i < n && !is_word_separator(cleaned[i])) ++i;
    if (begin == i) break;
    const char32_t* raw = cleaned.data() + begin;
    const size_t size = i - begin;

    if (!never_split_.empty()) {
      word_utf8.clear();
      for (size_t k = 0; k < size; ++k) unicode::append_utf8(raw[k], word_utf8);
      if (never_split_.count(word_utf8) > 0) {
        out.add(word_utf8);
        continue;
      }
    }
    if (options_.do_lower_case)
      lower_case(raw, size, word);
    else
      word.assign(raw, size);
    if (strip_accents_) strip_accents(word);

    for (char32_t cp : word) {
      if (unicode::is_punctuation(cp)) {
        out.finish_word();
        out.append(cp);
        out.finish_word();
      } else {
        out.append(cp);
      }
    }
    out.finish_word();
  }
}

std::vector<std::string> BasicTokenizer::tokenize(std::string_view text) const {
  WordList words;
  tokenize(text, words);
  std::vector<std::string> result;
  result.reserve(words.size());
  for (size_t i = 0; i < words.size(); ++i) result.emplace_back(words[i]);
  return result;
}

}  // namespace ctrainer
