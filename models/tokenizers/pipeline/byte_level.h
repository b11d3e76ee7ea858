#pragma once
/// \file GPT-2's byte-level alphabet (HF tokenizers' bytes_char): every byte as a printable
/// character, so that BPE works on bytes while the vocabulary stays text.
#include <cstdint>
#include <optional>
#include <string>

#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>

namespace ctrainer::tokenizers {

/// The character that stands for `byte`.
char32_t byte_to_char(uint8_t byte);
/// The byte `c` stands for, or nothing when `c` is not in the alphabet.
std::optional<uint8_t> char_to_byte(char32_t c);

/// Every byte of `text` replaced by its character; each byte's character aligns with the
/// original character it is part of (HF's ByteLevel normalize step).
void to_byte_level(NormalizedString& text);

/// The regex GPT-2 splits words with (HF's ByteLevel pre-tokenizer with use_regex).
const char* gpt2_split_pattern();

}  // namespace ctrainer::tokenizers
