#pragma once
/// \file NormalizedString: a piece of text as the tokenizer pipeline changes it, remembering for
/// every byte of the changed text which bytes of the original it came from, so that each token
/// can report its offsets in what the user passed. The alignment rules are those of HF
/// tokenizers' NormalizedString (normalizer.rs): an inserted character shares the alignment of
/// the one before it, a replacing character takes the alignment of the one it replaces, and a
/// token's offsets run from the start of its first byte's alignment to the end of its last's.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ctrainer::tokenizers {

/// Byte offsets [first, second) into a text.
using Offsets = std::pair<size_t, size_t>;

/// One character of a transformation and how it changes the text (HF's `(char, isize)`):
/// 0 replaces the next character of the input, +1 is inserted, -n replaces the next character
/// and removes the n after it.
struct CharChange {
  char32_t c;
  int64_t change;
};

class NormalizedString {
 public:
  NormalizedString() = default;
  /// `original` unchanged; offsets count from `original_start` (the piece's place in the text).
  explicit NormalizedString(std::string original, size_t original_start = 0);

  const std::string& get() const { return normalized_; }
  bool empty() const { return normalized_.empty(); }
  size_t size() const { return normalized_.size(); }
  /// The original offsets of every normalized byte (absolute in the whole input text).
  const std::vector<Offsets>& alignments() const { return alignments_; }
  /// The original range this piece covers (absolute).
  Offsets original_offsets() const { return original_; }

  /// Original offsets of the normalized byte range [start, end): the first byte's start to the
  /// last byte's end; an empty range maps to the original position before it.
  Offsets original_range(size_t start, size_t end) const;

  /// Replaces the characters of normalized bytes [start, end) by `changes`, skipping
  /// `initial_offset` characters of the range first (HF's transform_range).
  void transform_range(size_t start, size_t end, const std::vector<CharChange>& changes,
                       size_t initial_offset);
  void transform(const std::vector<CharChange>& changes, size_t initial_offset) {
    transform_range(0, normalized_.size(), changes, initial_offset);
  }

  /// Each character mapped to its replacement(s) (the first replaces it, the rest are
  /// inserted): lowercasing, byte-level mapping.
  void map_chars(const std::function<void(char32_t, std::u32string&)>& mapping);
  /// Keeps the characters for which `keep` holds (HF's filter).
  void filter(const std::function<bool(char32_t)>& keep);
  /// Puts `s` in front; every new character aligns with the first one (HF's prepend).
  void prepend(std::string_view s);
  void append(std::string_view s);
  /// Removes leading and/or trailing whitespace.
  void strip(bool left, bool right);
  /// Replaces every match of the byte ranges `matches` (sorted, disjoint) by `content`; the new
  /// characters align with the last character they replace (HF's replace).
  void replace_ranges(const std::vector<Offsets>& matches, std::string_view content);

  /// The sub-piece of normalized bytes [start, end) (char boundaries), alignments kept.
  NormalizedString slice(size_t start, size_t end) const;

 private:
  std::string normalized_;
  std::vector<Offsets> alignments_;
  Offsets original_{0, 0};
};

/// Code points of UTF-8 `s` (which the pipeline has validated).
std::u32string to_u32(std::string_view s);
/// UTF-8 of `s`.
std::string to_utf8(std::u32string_view s);
/// Length in bytes of the UTF-8 character starting with `lead`.
inline size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}
/// Length in bytes of the UTF-8 encoding of `c`.
inline size_t utf8_length(char32_t c) {
  return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

}  // namespace ctrainer::tokenizers
