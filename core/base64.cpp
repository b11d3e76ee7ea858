#include <ctrainer/core/base64.h>

#include <array>
#include <cstdio>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The value of each base64 character, -1 for bytes outside the alphabet (padding included).
constexpr std::array<int8_t, 256> make_decode_table() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  return table;
}
constexpr auto kDecode = make_decode_table();

}  // namespace

std::string base64_encode(const uint8_t* data, size_t size) {
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    const uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = size - i;
  if (rest == 1) {
    const uint32_t v = uint32_t{data[i]} << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    const uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::vector<uint8_t> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    throw ArgumentError("invalid base64: length " + std::to_string(text.size()) +
                        " is not a multiple of 4");
  }
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const size_t valid = last ? 4 - padding : 4;  // characters that carry bits in this quad
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const auto c = static_cast<uint8_t>(text[i + k]);
      int8_t d = 0;
      if (k < valid) {
        d = kDecode[c];
        if (d < 0) {
          char shown[8];
          std::snprintf(shown, sizeof shown, c >= 0x20 && c < 0x7f ? "'%c'" : "0x%02x", c);
          throw ArgumentError("invalid base64: character " + std::string(shown) + " at position " +
                              std::to_string(i + k));
        }
      }
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<uint8_t>(v >> 16));
    if (valid >= 3) out.push_back(static_cast<uint8_t>(v >> 8));
    if (valid == 4) out.push_back(static_cast<uint8_t>(v));
    // Bits that no output byte uses must be zero, so every byte string has one encoding.
    if ((valid == 2 && (v & 0xFFFF) != 0) || (valid == 3 && (v & 0xFF) != 0)) {
      throw ArgumentError("invalid base64: non-zero padding bits at position " +
                          std::to_string(i + valid - 1));
    }
  }
  return out;
}

}  // namespace ctrainer
