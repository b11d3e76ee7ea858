#include <ctrainer/models/tokenizers/pipeline/precompiled_charsmap.h>

#include <cstring>
#include <stdexcept>

#include <utf8proc.h>

#include <ctrainer/core/base64.h>
#include <ctrainer/models/tokenizers/pipeline/json_fields.h>

namespace ctrainer::tokenizers {

namespace {

using nlohmann::json;

// darts-clone's unit layout.
bool has_leaf(uint32_t unit) {
  return ((unit >> 8) & 1) == 1;
}
uint32_t unit_value(uint32_t unit) {
  return unit & ((1U << 31) - 1);
}
uint32_t unit_label(uint32_t unit) {
  return unit & ((1U << 31) | 0xFF);
}
uint32_t unit_offset(uint32_t unit) {
  return (unit >> 10) << ((unit & (1U << 9)) >> 6);
}

/// Appends `replacement`'s characters for the `original` chunk as HF's Precompiled does: each
/// new character replaces one, extra ones are inserted, a shorter replacement folds the
/// removed count into its last change.
void replace(std::vector<CharChange>& changes, std::string_view original,
             std::string_view replacement) {
  const auto old_count = static_cast<int64_t>(to_u32(original).size());
  const std::u32string added = to_u32(replacement);
  const int64_t diff = static_cast<int64_t>(added.size()) - old_count;
  for (char32_t c : added) changes.push_back({c, 0});
  if (diff > 0) {
    for (int64_t k = 0; k < diff && k < static_cast<int64_t>(changes.size()); ++k)
      changes[changes.size() - 1 - static_cast<size_t>(k)].change = 1;
  } else if (diff < 0 && !changes.empty()) {
    changes.back().change += diff;
  }
}

/// Extended grapheme clusters of `s` (byte ranges), by utf8proc's rules.
std::vector<std::string_view> graphemes(std::string_view s) {
  std::vector<std::string_view> out;
  const std::u32string chars = to_u32(s);
  size_t start = 0, at = 0;
  utf8proc_int32_t state = 0;
  for (size_t i = 0; i < chars.size(); ++i) {
    if (i > 0 &&
        utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(chars[i - 1]),
                                         static_cast<utf8proc_int32_t>(chars[i]), &state)) {
      out.push_back(s.substr(start, at - start));
      start = at;
    }
    at += utf8_length(chars[i]);
  }
  if (at > start) out.push_back(s.substr(start, at - start));
  return out;
}

class PrecompiledNormalizer : public Normalizer {
 public:
  PrecompiledNormalizer(std::string base64, PrecompiledCharsmap map)
      : base64_(std::move(base64)), map_(std::move(map)) {}

  void normalize(NormalizedString& text) const override {
    std::vector<CharChange> changes;
    changes.reserve(text.size());
    bool modified = false;
    for (std::string_view grapheme : graphemes(text.get())) {
      if (grapheme.size() < 6) {
        if (const auto norm = map_.transform(grapheme)) {
          modified = true;
          replace(changes, grapheme, *norm);
          continue;
        }
      }
      for (size_t i = 0; i < grapheme.size();) {
        const size_t n = utf8_length(static_cast<unsigned char>(grapheme[i]));
        const std::string_view part = grapheme.substr(i, n);
        if (const auto norm = map_.transform(part)) {
          modified = true;
          replace(changes, part, *norm);
        } else {
          changes.push_back({to_u32(part)[0], 0});
        }
        i += n;
      }
    }
    if (modified) text.transform(changes, 0);
  }
  json to_json() const override {
    return {{"type", "Precompiled"}, {"precompiled_charsmap", base64_}};
  }

 private:
  std::string base64_;
  PrecompiledCharsmap map_;
};

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::vector<uint8_t> blob) : blob_(std::move(blob)) {
  if (blob_.size() < 4) throw std::invalid_argument("shorter than its 4-byte trie size");
  uint32_t trie_size = 0;
  std::memcpy(&trie_size, blob_.data(), 4);  // little-endian, as x86 and SentencePiece write it
  if (trie_size % 4 != 0 || trie_size > blob_.size() - 4 || trie_size == 0)
    throw std::invalid_argument("trie size " + std::to_string(trie_size) +
                                " does not fit the blob of " + std::to_string(blob_.size()) +
                                " bytes");
  trie_.resize(trie_size / 4);
  std::memcpy(trie_.data(), blob_.data() + 4, trie_size);
  normalized_ = std::string_view(reinterpret_cast<const char*>(blob_.data()) + 4 + trie_size,
                                 blob_.size() - 4 - trie_size);
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view chunk) const {
  size_t node = unit_offset(trie_[0]);
  for (char ch : chunk) {
    const auto c = static_cast<uint8_t>(ch);
    if (c == 0) break;
    node ^= c;
    if (node >= trie_.size()) return std::nullopt;
    const uint32_t unit = trie_[node];
    if (unit_label(unit) != c) return std::nullopt;
    node ^= unit_offset(unit);
    if (node >= trie_.size()) return std::nullopt;
    if (has_leaf(unit)) {
      const size_t index = unit_value(trie_[node]);
      if (index >= normalized_.size()) return std::nullopt;
      const size_t end = normalized_.find('\0', index);
      return normalized_.substr(index,
                                (end == std::string_view::npos ? normalized_.size() : end) - index);
    }
  }
  return std::nullopt;
}

std::shared_ptr<const Normalizer> precompiled_normalizer_from_json(const json& j,
                                                                   const std::string& path) {
  const std::string encoded = json_string(j, path, "precompiled_charsmap");
  try {
    return std::make_shared<PrecompiledNormalizer>(encoded,
                                                   PrecompiledCharsmap(base64_decode(encoded)));
  } catch (const std::exception& e) {
    throw TokenizerJsonError(json_child(path, "precompiled_charsmap"),
                             std::string("not a SentencePiece character map: ") + e.what());
  }
}

}  // namespace ctrainer::tokenizers
