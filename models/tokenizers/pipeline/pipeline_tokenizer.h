#pragma once
/// \file PipelineTokenizer: a whole tokenizer.json (HF tokenizers' Tokenizer): added tokens,
/// normalizer, pre-tokenizer, model, post-processor and decoder, read with every error naming
/// the file and the JSON path, and written back as the same components.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/models/tokenizers/pipeline/added_vocabulary.h>
#include <ctrainer/models/tokenizers/pipeline/decoders.h>
#include <ctrainer/models/tokenizers/pipeline/normalizers.h>
#include <ctrainer/models/tokenizers/pipeline/post_processors.h>
#include <ctrainer/models/tokenizers/pipeline/pre_tokenizers.h>
#include <ctrainer/models/tokenizers/pipeline/token_encoding.h>
#include <ctrainer/models/tokenizers/pipeline/token_models.h>

namespace ctrainer::tokenizers {

class PipelineTokenizer {
 public:
  /// From the parsed file; `source` names it in errors (ArgumentError "SOURCE: PATH: what").
  PipelineTokenizer(const nlohmann::json& j, const std::string& source);
  /// Reads and parses tokenizer.json at `path`.
  static std::shared_ptr<const PipelineTokenizer> from_file(const std::filesystem::path& path);
  /// The JSON of the file at `path`; ArgumentError naming it (with line and column) otherwise.
  static nlohmann::json read_file(const std::filesystem::path& path);

  /// One sequence or a pair, truncated (leaving room for the special tokens when they are
  /// added) and post-processed; offsets are in characters of each text. Throws ArgumentError
  /// for invalid UTF-8.
  TokenEncoding encode(const std::string& text, const std::string* pair, bool add_special_tokens,
                       const std::optional<TruncationParams>& truncation = std::nullopt) const;
  /// Text of `ids`: unknown ids are dropped, special added tokens too with skip_special_tokens.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const;

  std::optional<int64_t> token_to_id(const std::string& token) const;
  std::optional<std::string> id_to_token(int64_t id) const;
  /// One more than the largest id of the model and the added tokens.
  int64_t vocab_size() const;
  const AddedVocabulary& added_vocabulary() const { return added_; }
  /// Special tokens the post-processor adds to one sequence or a pair.
  size_t added_special_tokens(bool is_pair) const;
  /// Replaces the post-processor (transformers does so for add_bos_token / add_eos_token).
  void set_post_processor(std::shared_ptr<const PostProcessor> processor) {
    post_processor_ = std::move(processor);
  }
  bool has_post_processor() const { return post_processor_ != nullptr; }
  /// Makes `token` a special added token, as the Rust library's add_special_tokens: a token it
  /// knows keeps its id, a new one gets the next id after the model's and the added ones.
  /// Returns its id.
  int64_t add_special_token(AddedToken token);
  /// Adds `token` as it is (special or not), as the Rust library's add_tokens: a token it knows
  /// keeps its id, a new one gets the next id. Returns its id.
  int64_t add_token(AddedToken token);

  /// The whole tokenizer.json.
  nlohmann::json to_json() const;

 private:
  TokenEncoding encode_single(const std::string& text, int64_t type_id) const;

  AddedVocabulary added_;
  std::shared_ptr<const Normalizer> normalizer_;
  std::shared_ptr<const PreTokenizer> pre_tokenizer_;
  std::shared_ptr<const TokenModel> model_;
  std::shared_ptr<const PostProcessor> post_processor_;
  std::shared_ptr<const Decoder> decoder_;
  nlohmann::json truncation_, padding_;  // the file's own defaults, written back unchanged
};

}  // namespace ctrainer::tokenizers
