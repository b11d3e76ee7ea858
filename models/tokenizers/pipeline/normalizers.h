#pragma once
/// \file The normalizers of a tokenizer.json (HF tokenizers' `normalizers` module): NFC, NFD,
/// NFKC, NFKD (utf8proc), Lowercase, StripAccents, Strip, Replace, Prepend, Nmt,
/// BertNormalizer, Precompiled (SentencePiece's character map) and Sequence. Each changes a
/// NormalizedString in place, keeping its alignments, and writes itself back as JSON.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>

namespace ctrainer::tokenizers {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedString& text) const = 0;
  /// The component as tokenizer.json holds it.
  virtual nlohmann::json to_json() const = 0;
};

/// The normalizer `j` describes (`path` names it in errors); null JSON gives nullptr.
std::shared_ptr<const Normalizer> normalizer_from_json(const nlohmann::json& j,
                                                       const std::string& path);

/// The Unicode normalization forms, applied with HF's alignments (a decomposed character's
/// extra parts count as inserted, a composition as the first part with the rest removed).
enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };
void unicode_normalize(NormalizedString& text, UnicodeForm form);
/// Rust's char::to_lowercase on every character.
void lowercase(NormalizedString& text);

}  // namespace ctrainer::tokenizers
