#pragma once
/// \file Base64 (RFC 4648): RNG states in checkpoints, SentencePiece character maps in
/// tokenizer.json.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ctrainer {

/// Standard base64 (RFC 4648 alphabet, '=' padding, no line breaks).
std::string base64_encode(const uint8_t* data, size_t size);
inline std::string base64_encode(const std::vector<uint8_t>& bytes) {
  return base64_encode(bytes.data(), bytes.size());
}

/// Decodes standard padded base64. Throws ArgumentError on a length that is not a multiple of 4,
/// a character outside the alphabet, padding anywhere but in the last one or two positions, or
/// non-zero bits in the unused part of the last character (non-canonical encodings).
std::vector<uint8_t> base64_decode(std::string_view text);

}  // namespace ctrainer
