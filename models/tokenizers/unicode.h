#pragma once
/// \file UTF-8 decoding and the character classes of BERT's basic tokenizer (HF
/// tokenization_bert.py `_is_whitespace`, `_is_control`, `_is_punctuation`, `_is_chinese_char`).
#include <optional>
#include <string>
#include <string_view>

namespace ctrainer::unicode {

/// Byte offset of the first malformed UTF-8 sequence (overlong forms, surrogates and code points
/// above U+10FFFF included), or nullopt when `s` is valid.
std::optional<size_t> first_invalid_utf8(std::string_view s);

/// Appends the code points of `s` to `out`. Throws ArgumentError "invalid UTF-8 at byte N" for
/// malformed input: nothing is replaced silently.
void decode_utf8(std::string_view s, std::u32string& out);

/// Appends the UTF-8 encoding of the valid code point `cp` to `out`.
void append_utf8(char32_t cp, std::string& out);

/// Space, tab, LF, CR and every Zs character.
bool is_whitespace(char32_t cp);
/// Every C* category (Cc, Cf, Cn, Co, Cs) except tab, LF and CR, which count as whitespace.
bool is_control(char32_t cp);
/// The ASCII symbol ranges 33-47, 58-64, 91-96, 123-126 (so `$`, `+`, `^`, `` ` `` split too)
/// and every P* category.
bool is_punctuation(char32_t cp);
/// CJK Unified Ideographs (with extensions A-E) and the CJK Compatibility Ideographs blocks.
bool is_cjk_ideograph(char32_t cp);
/// Nonspacing mark (Mn): what accent stripping removes after NFD.
bool is_nonspacing_mark(char32_t cp);

/// Rust's `char::is_whitespace` (the White_Space property), which HF tokenizers' Strip,
/// WhitespaceSplit and Bert pre-tokenizer use: tab to CR, space, U+0085, U+00A0, U+1680,
/// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_white_space(char32_t cp);
/// Letters (L*) and numbers (N*): Rust's `char::is_alphanumeric` as far as the general category
/// tells (HF tokenizers' test for a word character).
bool is_alphanumeric(char32_t cp);
/// Numbers (Nd, Nl, No): Rust's `char::is_numeric` (HF's Digits pre-tokenizer).
bool is_numeric(char32_t cp);
/// Marks (Mn, Mc, Me): HF's StripAccents removes them.
bool is_mark(char32_t cp);
/// Other (Cc, Cf, Cs, Co, Cn): what HF's BertNormalizer counts as a control character.
bool is_other(char32_t cp);

}  // namespace ctrainer::unicode
