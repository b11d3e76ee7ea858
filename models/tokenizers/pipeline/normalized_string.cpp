#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>

#include <stdexcept>

#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer::tokenizers {

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  unicode::decode_utf8(s, out);
  return out;
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) unicode::append_utf8(c, out);
  return out;
}

NormalizedString::NormalizedString(std::string original, size_t original_start)
    : normalized_(std::move(original)), original_{original_start, original_start} {
  alignments_.reserve(normalized_.size());
  size_t i = 0;
  while (i < normalized_.size()) {
    const size_t n = utf8_length(static_cast<unsigned char>(normalized_[i]));
    const Offsets char_range{original_start + i, original_start + i + n};
    for (size_t k = 0; k < n; ++k) alignments_.push_back(char_range);
    i += n;
  }
  original_.second = original_start + normalized_.size();
}

Offsets NormalizedString::original_range(size_t start, size_t end) const {
  if (start >= end || start >= alignments_.size()) {
    const size_t at = start < alignments_.size() ? alignments_[start].first
                      : alignments_.empty()      ? original_.first
                                                 : alignments_.back().second;
    return {at, at};
  }
  return {alignments_[start].first, alignments_[std::min(end, alignments_.size()) - 1].second};
}

void NormalizedString::transform_range(size_t start, size_t end,
                                       const std::vector<CharChange>& changes,
                                       size_t initial_offset) {
  // The characters being replaced, by byte length, to know how far each change moves.
  std::vector<size_t> replaced;
  for (size_t i = start; i < end;) {
    const size_t n = utf8_length(static_cast<unsigned char>(normalized_[i]));
    replaced.push_back(n);
    i += n;
  }
  size_t next_replaced = 0;
  size_t offset = start;
  for (; next_replaced < initial_offset && next_replaced < replaced.size(); ++next_replaced)
    offset += replaced[next_replaced];

  std::string text;
  std::vector<Offsets> alignments;
  text.reserve(end - start);
  alignments.reserve(end - start);
  const Offsets at_start{original_.first, original_.first};
  for (const auto& [c, change] : changes) {
    Offsets align;
    if (change > 0) {
      // Inserted: shares the alignment of the character before it.
      align = offset == 0 ? at_start : alignments_[offset - 1];
    } else {
      align = offset < alignments_.size() ? alignments_[offset]
              : alignments_.empty()       ? at_start
                                          : alignments_.back();
    }
    if (change <= 0 && next_replaced < replaced.size()) offset += replaced[next_replaced++];
    for (int64_t removed = 0; removed < -change && next_replaced < replaced.size(); ++removed)
      offset += replaced[next_replaced++];
    const size_t before = text.size();
    unicode::append_utf8(c, text);
    alignments.insert(alignments.end(), text.size() - before, align);
  }
  normalized_.replace(start, end - start, text);
  alignments_.erase(alignments_.begin() + static_cast<std::ptrdiff_t>(start),
                    alignments_.begin() + static_cast<std::ptrdiff_t>(end));
  alignments_.insert(alignments_.begin() + static_cast<std::ptrdiff_t>(start), alignments.begin(),
                     alignments.end());
}

void NormalizedString::map_chars(const std::function<void(char32_t, std::u32string&)>& mapping) {
  std::vector<CharChange> changes;
  changes.reserve(normalized_.size());
  std::u32string mapped;
  for (char32_t c : to_u32(normalized_)) {
    mapped.clear();
    mapping(c, mapped);
    for (size_t k = 0; k < mapped.size(); ++k) changes.push_back({mapped[k], k == 0 ? 0 : 1});
  }
  transform(changes, 0);
}

void NormalizedString::filter(const std::function<bool(char32_t)>& keep) {
  std::vector<CharChange> changes;
  changes.reserve(normalized_.size());
  int64_t removed = 0;
  size_t removed_at_start = 0;
  bool have_last = false;
  char32_t last = 0;
  for (char32_t c : to_u32(normalized_)) {
    if (keep(c)) {
      if (have_last)
        changes.push_back({last, -removed});
      else
        removed_at_start = static_cast<size_t>(removed);
      last = c;
      have_last = true;
      removed = 0;
    } else {
      ++removed;
    }
  }
  if (have_last) changes.push_back({last, -removed});
  if (!have_last) removed_at_start = static_cast<size_t>(removed);
  transform(changes, removed_at_start);
}

void NormalizedString::prepend(std::string_view s) {
  if (normalized_.empty() || s.empty()) return;
  const size_t first_length = utf8_length(static_cast<unsigned char>(normalized_[0]));
  const std::u32string first = to_u32(normalized_.substr(0, first_length));
  std::vector<CharChange> changes;
  const std::u32string added = to_u32(s);
  for (size_t i = 0; i < added.size(); ++i) changes.push_back({added[i], i == 0 ? 0 : 1});
  changes.push_back({first[0], 1});
  transform_range(0, first_length, changes, 0);
}

void NormalizedString::append(std::string_view s) {
  if (normalized_.empty() || s.empty()) return;
  size_t last_start = normalized_.size() - 1;
  while (last_start > 0 && (static_cast<unsigned char>(normalized_[last_start]) & 0xC0) == 0x80)
    --last_start;
  const std::u32string last = to_u32(normalized_.substr(last_start));
  std::vector<CharChange> changes{{last[0], 0}};
  for (char32_t c : to_u32(s)) changes.push_back({c, 1});
  transform_range(last_start, normalized_.size(), changes, 0);
}

void NormalizedString::strip(bool left, bool right) {
  const std::u32string chars = to_u32(normalized_);
  size_t leading = 0, trailing = 0;
  if (left)
    while (leading < chars.size() && unicode::is_white_space(chars[leading])) ++leading;
  if (right)
    while (trailing < chars.size() - leading &&
           unicode::is_white_space(chars[chars.size() - 1 - trailing]))
      ++trailing;
  if (leading == 0 && trailing == 0) return;
  std::vector<CharChange> changes;
  for (size_t i = leading; i < chars.size() - trailing; ++i) changes.push_back({chars[i], 0});
  transform(changes, leading);
}

void NormalizedString::replace_ranges(const std::vector<Offsets>& matches,
                                      std::string_view content) {
  const std::u32string replacement = to_u32(content);
  std::vector<CharChange> inserted;
  for (char32_t c : replacement) inserted.push_back({c, 1});
  // Each replacement moves the later matches by the change in length.
  std::ptrdiff_t shift = 0;
  for (const auto& [match_start, match_end] : matches) {
    const size_t start = static_cast<size_t>(static_cast<std::ptrdiff_t>(match_start) + shift);
    const size_t end = static_cast<size_t>(static_cast<std::ptrdiff_t>(match_end) + shift);
    size_t removed_chars = 0;
    for (size_t i = start; i < end; ++i)
      if ((static_cast<unsigned char>(normalized_[i]) & 0xC0) != 0x80) ++removed_chars;
    transform_range(start, end, inserted, removed_chars);
    shift += static_cast<std::ptrdiff_t>(content.size()) -
             static_cast<std::ptrdiff_t>(match_end - match_start);
  }
}

NormalizedString NormalizedString::slice(size_t start, size_t end) const {
  NormalizedString piece;
  piece.normalized_ = normalized_.substr(start, end - start);
  piece.alignments_.assign(alignments_.begin() + static_cast<std::ptrdiff_t>(start),
                           alignments_.begin() + static_cast<std::ptrdiff_t>(end));
  piece.original_ = original_range(start, end);
  return piece;
}

}  // namespace ctrainer::tokenizers
