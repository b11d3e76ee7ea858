#pragma once
/// \file The pre-tokenizers of a tokenizer.json (HF tokenizers' `pre_tokenizers` module):
/// ByteLevel, Metaspace, Split, Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation,
/// Digits, CharDelimiterSplit and Sequence. Each cuts the splits of a PreTokenizedString.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/models/tokenizers/pipeline/pre_tokenized_string.h>

namespace ctrainer::tokenizers {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(PreTokenizedString& text) const = 0;
  virtual nlohmann::json to_json() const = 0;
};

/// The pre-tokenizer `j` describes; null JSON gives nullptr.
std::shared_ptr<const PreTokenizer> pre_tokenizer_from_json(const nlohmann::json& j,
                                                            const std::string& path);

}  // namespace ctrainer::tokenizers
