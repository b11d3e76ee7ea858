#pragma once
/// \file The Precompiled normalizer: SentencePiece's character map, as real T5, ALBERT, XLNet
/// and Llama 2 tokenizer.json files carry it (base64 of a darts-clone double-array trie followed
/// by the replacement strings), applied per grapheme as HF tokenizers does.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/models/tokenizers/pipeline/normalizers.h>

namespace ctrainer::tokenizers {

/// The decoded character map: which byte strings normalize to which.
class PrecompiledCharsmap {
 public:
  /// Parses the blob (after base64); throws std::invalid_argument when it is malformed.
  explicit PrecompiledCharsmap(std::vector<uint8_t> blob);
  /// The replacement of `chunk` (its shortest prefix in the trie, as SentencePiece looks it up),
  /// or nothing when the map has none.
  std::optional<std::string_view> transform(std::string_view chunk) const;

 private:
  std::vector<uint8_t> blob_;
  std::vector<uint32_t> trie_;
  std::string_view normalized_;
};

/// {"type": "Precompiled", "precompiled_charsmap": "<base64>"}.
std::shared_ptr<const Normalizer> precompiled_normalizer_from_json(const nlohmann::json& j,
                                                                   const std::string& path);

}  // namespace ctrainer::tokenizers
