#include <ctrainer/models/tokenizers/pipeline/byte_level.h>

#include <array>
#include <unordered_map>

namespace ctrainer::tokenizers {

namespace {

/// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others (in byte
/// order) for U+0100 onwards.
const std::array<char32_t, 256>& byte_table() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      t[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
    }
    return t;
  }();
  return table;
}

}  // namespace

char32_t byte_to_char(uint8_t byte) {
  return byte_table()[byte];
}

std::optional<uint8_t> char_to_byte(char32_t c) {
  static const std::unordered_map<char32_t, uint8_t> reverse = [] {
    std::unordered_map<char32_t, uint8_t> r;
    for (int b = 0; b < 256; ++b) r[byte_table()[static_cast<size_t>(b)]] = static_cast<uint8_t>(b);
    return r;
  }();
  const auto it = reverse.find(c);
  if (it == reverse.end()) return std::nullopt;
  return it->second;
}

void to_byte_level(NormalizedString& text) {
  const std::string& s = text.get();
  std::vector<CharChange> changes;
  changes.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = utf8_length(static_cast<unsigned char>(s[i]));
    for (size_t k = 0; k < n; ++k)
      changes.push_back({byte_to_char(static_cast<uint8_t>(s[i + k])), k == 0 ? 0 : 1});
    i += n;
  }
  text.transform(changes, 0);
}

const char* gpt2_split_pattern() {
  return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
}

}  // namespace ctrainer::tokenizers
