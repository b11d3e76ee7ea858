#include <ctrainer/models/tokenizers/unicode.h>

#include <utf8proc.h>

#include <ctrainer/core/errors.h>

namespace ctrainer::unicode {

namespace {

/// Decodes the sequence at `s[i]`; returns its length, or a negative value when malformed.
inline utf8proc_ssize_t next_code_point(std::string_view s, size_t i, utf8proc_int32_t* cp) {
  return utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data()) + i,
                          static_cast<utf8proc_ssize_t>(s.size() - i), cp);
}

}  // namespace

std::optional<size_t> first_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    utf8proc_int32_t cp;
    utf8proc_ssize_t n = next_code_point(s, i, &cp);
    if (n <= 0) return i;
    i += static_cast<size_t>(n);
  }
  return std::nullopt;
}

void decode_utf8(std::string_view s, std::u32string& out) {
  out.reserve(out.size() + s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto byte = static_cast<unsigned char>(s[i]);
    if (byte < 0x80) {  // ASCII fast path: most GLUE text never leaves it.
      out.push_back(byte);
      ++i;
      continue;
    }
    utf8proc_int32_t cp;
    utf8proc_ssize_t n = next_code_point(s, i, &cp);
    if (n <= 0)
      throw ArgumentError("invalid UTF-8 at byte " + std::to_string(i) +
                          " of the text; the tokenizer only accepts UTF-8 input");
    out.push_back(static_cast<char32_t>(cp));
    i += static_cast<size_t>(n);
  }
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
    return;
  }
  utf8proc_uint8_t buf[4];
  utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

bool is_whitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  if (cp < 0x80) return false;
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ZS;
}

bool is_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  if (cp < 0x80) return cp < 0x20 || cp == 0x7F;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
      return true;
    default:
      return false;
  }
}

bool is_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126))
    return true;
  if (cp < 0x80) return false;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool is_cjk_ideograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_nonspacing_mark(char32_t cp) {
  return cp >= 0x80 && utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_MN;
}

namespace {

utf8proc_category_t category(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

}  // namespace

bool is_white_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

bool is_alphanumeric(char32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
  const auto c = category(cp);
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
         (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

bool is_numeric(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO;
}

bool is_mark(char32_t cp) {
  if (cp < 0x80) return false;
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_MN && c <= UTF8PROC_CATEGORY_ME;
}

bool is_other(char32_t cp) {
  if (cp < 0x80) return cp < 0x20 || cp == 0x7F;
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_CN || (c >= UTF8PROC_CATEGORY_CC && c <= UTF8PROC_CATEGORY_CO);
}

}  // namespace ctrainer::unicode
