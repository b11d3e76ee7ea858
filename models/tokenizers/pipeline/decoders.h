#pragma once
/// \file The decoders of a tokenizer.json (HF tokenizers' `decoders` module): what turns
/// tokens back into text. ByteLevel, Metaspace, WordPiece, BPEDecoder, ByteFallback, Fuse,
/// Strip, Replace and Sequence, each a step over the list of token strings.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer::tokenizers {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
  /// The text of `tokens`: the chain's pieces joined.
  std::string decode(std::vector<std::string> tokens) const;
  virtual nlohmann::json to_json() const = 0;
};

std::shared_ptr<const Decoder> decoder_from_json(const nlohmann::json& j, const std::string& path);

/// transformers' clean_up_tokenization: no space before . ? ! , and English contractions.
std::string clean_up_tokenization(std::string text);

/// `bytes` as UTF-8 text, each invalid sequence replaced by U+FFFD as Rust's
/// String::from_utf8_lossy does (one per maximal invalid subpart).
std::string utf8_lossy(const std::string& bytes);

}  // namespace ctrainer::tokenizers
