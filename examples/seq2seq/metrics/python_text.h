#pragma once
/// \file What Python's `str` methods do to UTF-8 text, as far as the metrics need them. The
/// reference packages work on Python strings (sequences of code points), so their whitespace
/// splits, strips, lower-casing and character n-grams are Unicode-aware; these helpers give the
/// same results on the UTF-8 bytes our programs hold.
#include <string>
#include <string_view>
#include <vector>

namespace ctrainer::text_metrics {

/// The code points of UTF-8 `text`. A byte that starts no valid sequence becomes U+DC80 + byte, as
/// Python's `bytes.decode("utf-8", "surrogateescape")` does: no input is rejected or merged.
std::u32string decode_utf8(std::string_view text);

/// UTF-8 of `code_points`; the U+DC80..U+DCFF escapes made by decode_utf8 become their byte again.
std::string encode_utf8(std::u32string_view code_points);

/// Python's `str.isspace()` for one code point: the characters `str.split()` and `str.rstrip()`
/// (without arguments) treat as whitespace. Wider than ASCII: U+001C..U+001F, U+0085, U+00A0
/// (no-break space), U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_python_whitespace(char32_t code_point);

/// Python's `text.split()` (no argument): the maximal runs of non-whitespace, as views into `text`.
std::vector<std::string_view> python_split(std::string_view text);

/// Python's `text.rstrip()` (no argument): `text` without its trailing whitespace.
std::string_view python_rstrip(std::string_view text);

/// Python's `text.lower()`: Unicode's full lower-case mapping (U+0130 becomes "i" + U+0307) with
/// the Final_Sigma rule (U+03A3 becomes final sigma U+03C2 after a cased letter and not before
/// one, looking through case-ignorable characters), as CPython implements it. The per-character
/// mappings are utf8proc's; they equal Python 3.11's for every code point. Python 3.11 knows
/// Unicode 14 and utf8proc 2.8 Unicode 15, so only the sigma rule next to a character that is new
/// in Unicode 15 can differ.
std::u32string python_lower(std::u32string_view text);

/// python_lower on UTF-8 text.
std::string python_lower(std::string_view text);

}  // namespace ctrainer::text_metrics
