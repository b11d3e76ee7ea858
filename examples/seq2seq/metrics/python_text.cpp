#include <ctrainer/examples/seq2seq/metrics/python_text.h>

#include <utf8proc.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace ctrainer::text_metrics {
namespace {

constexpr char32_t kFirstSurrogateEscape = 0xDC80;
constexpr char32_t kCapitalSigma = 0x03A3;
constexpr char32_t kFinalSigma = 0x03C2;
constexpr char32_t kCapitalIWithDotAbove = 0x0130;
constexpr char32_t kCombiningDotAbove = 0x0307;

/// The code point at `text[position]` and its length in bytes (an invalid byte: its escape, 1).
std::pair<char32_t, std::size_t> code_point_at(std::string_view text, std::size_t position) {
  const auto byte = static_cast<unsigned char>(text[position]);
  if (byte < 0x80) return {byte, 1};
  utf8proc_int32_t code_point = 0;
  const auto length =
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + position),
                       static_cast<utf8proc_ssize_t>(text.size() - position), &code_point);
  if (length <= 0) return {kFirstSurrogateEscape + (byte - 0x80), 1};
  return {static_cast<char32_t>(code_point), static_cast<std::size_t>(length)};
}

void append_utf8(std::string& out, char32_t code_point) {
  if (code_point >= kFirstSurrogateEscape && code_point <= kFirstSurrogateEscape + 0x7F) {
    out.push_back(static_cast<char>(0x80 + (code_point - kFirstSurrogateEscape)));
  } else if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

/// Unicode's Case_Ignorable: categories Mn, Me, Cf, Lm, Sk, and the Word_Break classes MidLetter,
/// MidNumLet and Single_Quote (which is why "." and "'" are case-ignorable).
bool is_case_ignorable(char32_t code_point) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(code_point))) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      break;
  }
  // Word_Break MidLetter, MidNumLet and Single_Quote.
  constexpr char32_t kMidWordPunctuation[] = {0x0027, 0x002E, 0x003A, 0x00B7, 0x0387, 0x055F,
                                              0x05F4, 0x2018, 0x2019, 0x2024, 0x2027, 0xFE13,
                                              0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
  return std::find(std::begin(kMidWordPunctuation), std::end(kMidWordPunctuation), code_point) !=
         std::end(kMidWordPunctuation);
}

/// Unicode's Cased (Lowercase, Uppercase or Lt). utf8proc has no Other_Lowercase /
/// Other_Uppercase: the letters with a case mapping cover them except ª, º and the squared and
/// negative circled / squared capital letters, listed here. (Checked against CPython 3.11 over
/// every code point that is not case-ignorable, the only ones whose casedness the sigma rule
/// reads.)
bool is_cased(char32_t code_point) {
  const auto as_int = static_cast<utf8proc_int32_t>(code_point);
  switch (utf8proc_category(as_int)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
      return true;
    default:
      break;
  }
  if (code_point == 0x00AA || code_point == 0x00BA) return true;
  if ((code_point >= 0x1F130 && code_point <= 0x1F149) ||
      (code_point >= 0x1F150 && code_point <= 0x1F169) ||
      (code_point >= 0x1F170 && code_point <= 0x1F189))
    return true;
  return utf8proc_tolower(as_int) != as_int || utf8proc_toupper(as_int) != as_int;
}

/// CPython's handle_capital_sigma: final when a cased letter precedes (skipping case-ignorables)
/// and no cased letter follows (skipping case-ignorables).
bool is_final_sigma(std::u32string_view text, std::size_t position) {
  std::size_t before = position;
  while (before > 0 && is_case_ignorable(text[before - 1])) --before;
  if (before == 0 || !is_cased(text[before - 1])) return false;
  std::size_t after = position + 1;
  while (after < text.size() && is_case_ignorable(text[after])) ++after;
  return after == text.size() || !is_cased(text[after]);
}

}  // namespace

std::u32string decode_utf8(std::string_view text) {
  std::u32string code_points;
  code_points.reserve(text.size());
  for (std::size_t position = 0; position < text.size();) {
    const auto [code_point, length] = code_point_at(text, position);
    code_points.push_back(code_point);
    position += length;
  }
  return code_points;
}

std::string encode_utf8(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (const char32_t code_point : code_points) append_utf8(out, code_point);
  return out;
}

bool is_python_whitespace(char32_t code_point) {
  if (code_point < 0x80)
    return (code_point >= 0x09 && code_point <= 0x0D) || (code_point >= 0x1C && code_point <= 0x20);
  return code_point == 0x85 || code_point == 0xA0 || code_point == 0x1680 ||
         (code_point >= 0x2000 && code_point <= 0x200A) || code_point == 0x2028 ||
         code_point == 0x2029 || code_point == 0x202F || code_point == 0x205F ||
         code_point == 0x3000;
}

std::vector<std::string_view> python_split(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t word_start = std::string_view::npos;
  for (std::size_t position = 0; position < text.size();) {
    const auto [code_point, length] = code_point_at(text, position);
    if (is_python_whitespace(code_point)) {
      if (word_start != std::string_view::npos)
        words.push_back(text.substr(word_start, position - word_start));
      word_start = std::string_view::npos;
    } else if (word_start == std::string_view::npos) {
      word_start = position;
    }
    position += length;
  }
  if (word_start != std::string_view::npos) words.push_back(text.substr(word_start));
  return words;
}

std::string_view python_rstrip(std::string_view text) {
  std::size_t end = 0;  // one past the last non-whitespace code point
  for (std::size_t position = 0; position < text.size();) {
    const auto [code_point, length] = code_point_at(text, position);
    position += length;
    if (!is_python_whitespace(code_point)) end = position;
  }
  return text.substr(0, end);
}

std::u32string python_lower(std::u32string_view text) {
  std::u32string lowered;
  lowered.reserve(text.size());
  for (std::size_t position = 0; position < text.size(); ++position) {
    const char32_t code_point = text[position];
    if (code_point < 0x80) {
      lowered.push_back(code_point >= 'A' && code_point <= 'Z' ? code_point + ('a' - 'A')
                                                               : code_point);
    } else if (code_point == kCapitalIWithDotAbove) {
      // The one unconditional multi-character lower-case mapping (SpecialCasing.txt).
      lowered.push_back(U'i');
      lowered.push_back(kCombiningDotAbove);
    } else if (code_point == kCapitalSigma && is_final_sigma(text, position)) {
      lowered.push_back(kFinalSigma);
    } else {
      lowered.push_back(
          static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(code_point))));
    }
  }
  return lowered;
}

std::string python_lower(std::string_view text) {
  bool ascii = true;
  for (const char byte : text) ascii = ascii && static_cast<unsigned char>(byte) < 0x80;
  if (!ascii) return encode_utf8(python_lower(decode_utf8(text)));
  std::string lowered(text);
  for (char& byte : lowered)
    if (byte >= 'A' && byte <= 'Z') byte = static_cast<char>(byte + ('a' - 'A'));
  return lowered;
}

}  // namespace ctrainer::text_metrics
