#include <ctrainer/models/tokenizers/pipeline/pre_tokenized_string.h>

namespace ctrainer::tokenizers {

PreTokenizedString::PreTokenizedString(std::string original) : original_(std::move(original)) {
  splits_.push_back({NormalizedString(original_), std::nullopt});
}

void PreTokenizedString::split(
    const std::function<std::vector<NormalizedString>(size_t, NormalizedString&&)>& cut) {
  std::vector<Split> result;
  result.reserve(splits_.size());
  for (size_t i = 0; i < splits_.size(); ++i) {
    if (splits_[i].tokens) {
      result.push_back(std::move(splits_[i]));
      continue;
    }
    for (auto& piece : cut(i, std::move(splits_[i].normalized)))
      if (!piece.empty()) result.push_back({std::move(piece), std::nullopt});
  }
  splits_ = std::move(result);
}

void PreTokenizedString::normalize(const std::function<void(NormalizedString&)>& change) {
  for (auto& split : splits_)
    if (!split.tokens) change(split.normalized);
}

void PreTokenizedString::tokenize(
    const std::function<std::vector<Token>(const std::string&)>& model) {
  for (auto& split : splits_)
    if (!split.tokens) split.tokens = model(split.normalized.get());
}

std::vector<PositionedToken> PreTokenizedString::into_tokens() const {
  // Byte position -> character index of the original text (HF's BytesToCharOffsetConverter).
  std::vector<size_t> char_of_byte(original_.size());
  size_t chars = 0;
  for (size_t i = 0; i < original_.size();) {
    const size_t n = utf8_length(static_cast<unsigned char>(original_[i]));
    for (size_t k = 0; k < n && i + k < original_.size(); ++k) char_of_byte[i + k] = chars;
    i += n;
    ++chars;
  }
  const auto to_chars = [&](Offsets bytes) -> Offsets {
    if (bytes.first >= char_of_byte.size()) return bytes;  // not convertible: stays in bytes
    const size_t start = char_of_byte[bytes.first];
    if (bytes.second < char_of_byte.size()) return {start, char_of_byte[bytes.second]};
    const size_t last = bytes.second >= 1 && bytes.second - 1 < char_of_byte.size()
                            ? char_of_byte[bytes.second - 1]
                            : start + 1;
    return {start, last + 1};
  };
  std::vector<PositionedToken> out;
  for (size_t word = 0; word < splits_.size(); ++word) {
    const auto& split = splits_[word];
    if (!split.tokens) continue;
    for (const auto& token : *split.tokens) {
      const Offsets bytes =
          token.offsets.first < token.offsets.second
              ? split.normalized.original_range(token.offsets.first, token.offsets.second)
              : token.offsets;
      out.push_back({token.id, token.value, to_chars(bytes), static_cast<int64_t>(word)});
    }
  }
  return out;
}

std::vector<NormalizedString> slices(const NormalizedString& text,
                                     const std::vector<Offsets>& ranges) {
  std::vector<NormalizedString> out;
  out.reserve(ranges.size());
  for (const auto& [start, end] : ranges) out.push_back(text.slice(start, end));
  return out;
}

}  // namespace ctrainer::tokenizers
