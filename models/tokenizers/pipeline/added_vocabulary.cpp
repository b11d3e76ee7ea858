#include <ctrainer/models/tokenizers/pipeline/added_vocabulary.h>

#include <algorithm>

#include <ctrainer/models/tokenizers/pipeline/json_fields.h>
#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer::tokenizers {

namespace {

using nlohmann::json;

bool is_word_character(char32_t c) {
  return c == U'_' || unicode::is_alphanumeric(c);
}

char32_t last_char(std::string_view s) {
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return to_u32(s.substr(i))[0];
}

char32_t first_char(std::string_view s) {
  return to_u32(s.substr(0, utf8_length(static_cast<unsigned char>(s[0]))))[0];
}

/// Where the whitespace at the end of `s` starts.
size_t trailing_space_start(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t i = end - 1;
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
    if (!unicode::is_white_space(to_u32(s.substr(i, end - i))[0])) break;
    end = i;
  }
  return end;
}

/// Bytes of whitespace at the start of `s`.
size_t leading_space_length(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = utf8_length(static_cast<unsigned char>(s[i]));
    if (!unicode::is_white_space(to_u32(s.substr(i, n))[0])) break;
    i += n;
  }
  return i;
}

}  // namespace

AddedVocabulary::AddedVocabulary(const json& list, const std::string& path,
                                 const std::shared_ptr<const Normalizer>& normalizer) {
  if (!list.is_array()) throw TokenizerJsonError(path, "expected an array of added tokens");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = json_item(path, i);
    const auto& t = list[i];
    AddedToken token;
    token.id = json_int(t, where, "id");
    token.content = json_string(t, where, "content");
    token.single_word = json_bool(t, where, "single_word", false);
    token.lstrip = json_bool(t, where, "lstrip", false);
    token.rstrip = json_bool(t, where, "rstrip", false);
    token.normalized = json_bool(t, where, "normalized", true);
    token.special = json_bool(t, where, "special", false);
    if (token.content.empty()) throw TokenizerJsonError(json_child(where, "content"), "empty");
    add(std::move(token), normalizer.get());
  }
}

void AddedVocabulary::add(AddedToken token, const Normalizer* normalizer) {
  const size_t index = tokens_.size();
  by_content_[token.content] = index;
  by_id_[token.id] = index;
  if (token.normalized) {
    NormalizedString content(token.content);
    if (normalizer) normalizer->normalize(content);
    if (!content.empty()) add_pattern(normalized_, content.get(), index);
  } else {
    add_pattern(raw_, token.content, index);
  }
  tokens_.push_back(std::move(token));
}

void AddedVocabulary::add_pattern(Matcher& matcher, const std::string& pattern,
                                  size_t token) const {
  auto& list = matcher.by_first_byte[static_cast<unsigned char>(pattern[0])];
  list.emplace_back(pattern, token);
  std::stable_sort(list.begin(), list.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

std::vector<NormalizedString> AddedVocabulary::split_at_tokens(
    NormalizedString&& text, const Matcher& matcher,
    std::vector<std::optional<size_t>>& token_of) const {
  std::vector<NormalizedString> pieces;
  const std::string& s = text.get();
  if (matcher.by_first_byte.empty() || s.empty()) {
    pieces.push_back(std::move(text));
    token_of.push_back(std::nullopt);
    return pieces;
  }
  size_t start_offset = 0;
  size_t at = 0;
  const auto emit = [&](size_t from, size_t to, std::optional<size_t> token) {
    pieces.push_back(text.slice(from, to));
    token_of.push_back(token);
  };
  while (at < s.size()) {
    const auto bucket = matcher.by_first_byte.find(static_cast<unsigned char>(s[at]));
    const std::pair<std::string, size_t>* match = nullptr;
    if (bucket != matcher.by_first_byte.end())
      for (const auto& candidate : bucket->second)
        if (s.compare(at, candidate.first.size(), candidate.first) == 0) {
          match = &candidate;
          break;
        }
    if (match == nullptr) {
      ++at;
      continue;
    }
    size_t start = at, stop = at + match->first.size();
    const AddedToken& token = tokens_[match->second];
    if (token.single_word) {
      const bool space_before = start == 0 || !is_word_character(last_char(s.substr(0, start)));
      const bool space_after = stop == s.size() || !is_word_character(first_char(s.substr(stop)));
      if (!space_before || !space_after) {
        at = stop;  // the matcher moves past a match it found, used or not (non-overlapping)
        continue;
      }
    }
    if (token.lstrip) start = std::max(trailing_space_start(s.substr(0, start)), start_offset);
    if (token.rstrip) stop += leading_space_length(s.substr(stop));
    if (start_offset < start) emit(start_offset, start, std::nullopt);
    emit(start, stop, match->second);
    start_offset = stop;
    at = stop;
  }
  if (start_offset != s.size()) emit(start_offset, s.size(), std::nullopt);
  return pieces;
}

PreTokenizedString AddedVocabulary::extract_and_normalize(const std::string& text,
                                                          const Normalizer* normalizer) const {
  PreTokenizedString result(text);
  const auto cut = [&](const Matcher& matcher, bool normalize_first) {
    std::vector<Split> splits;
    for (auto& split : result.splits()) {
      if (split.tokens) {
        splits.push_back(std::move(split));
        continue;
      }
      if (normalize_first && normalizer) normalizer->normalize(split.normalized);
      std::vector<std::optional<size_t>> token_of;
      auto pieces = split_at_tokens(std::move(split.normalized), matcher, token_of);
      for (size_t i = 0; i < pieces.size(); ++i) {
        if (pieces[i].empty()) continue;
        Split piece{std::move(pieces[i]), std::nullopt};
        if (token_of[i]) {
          const auto& t = tokens_[*token_of[i]];
          piece.tokens =
              std::vector<Token>{{t.id, piece.normalized.get(), {0, piece.normalized.size()}}};
        }
        splits.push_back(std::move(piece));
      }
    }
    result.splits() = std::move(splits);
  };
  cut(raw_, false);
  cut(normalized_, true);
  return result;
}

std::optional<int64_t> AddedVocabulary::token_to_id(const std::string& content) const {
  const auto it = by_content_.find(content);
  if (it == by_content_.end()) return std::nullopt;
  return tokens_[it->second].id;
}

std::optional<std::string> AddedVocabulary::id_to_token(int64_t id) const {
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return tokens_[it->second].content;
}

bool AddedVocabulary::is_special(const std::string& content) const {
  const auto it = by_content_.find(content);
  return it != by_content_.end() && tokens_[it->second].special;
}

json AddedVocabulary::to_json() const {
  json list = json::array();
  for (const auto& t : tokens_)
    list.push_back({{"id", t.id},
                    {"content", t.content},
                    {"single_word", t.single_word},
                    {"lstrip", t.lstrip},
                    {"rstrip", t.rstrip},
                    {"normalized", t.normalized},
                    {"special", t.special}});
  return list;
}

}  // namespace ctrainer::tokenizers
