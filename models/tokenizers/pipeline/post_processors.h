#pragma once
/// \file The post-processors of a tokenizer.json (HF tokenizers' `processors` module): what
/// adds the special tokens and type ids around one sequence or a pair. TemplateProcessing,
/// BertProcessing, RobertaProcessing, ByteLevel (offset trimming) and Sequence.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/models/tokenizers/pipeline/token_encoding.h>

namespace ctrainer::tokenizers {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  /// How many special tokens it adds to one sequence or a pair (truncation leaves room).
  virtual size_t added_tokens(bool is_pair) const = 0;
  /// The encodings of the sequence (and pair) with special tokens and type ids.
  virtual std::vector<TokenEncoding> process(std::vector<TokenEncoding> encodings,
                                             bool add_special_tokens) const = 0;
  virtual nlohmann::json to_json() const = 0;
};

std::shared_ptr<const PostProcessor> post_processor_from_json(const nlohmann::json& j,
                                                              const std::string& path);

/// HF's ByteLevel offset trimming: offsets no longer cover the leading and trailing spaces
/// ('Ġ') of a token, except the space added in front of the first word with add_prefix_space.
void trim_byte_level_offsets(TokenEncoding& encoding, bool add_prefix_space);

}  // namespace ctrainer::tokenizers
