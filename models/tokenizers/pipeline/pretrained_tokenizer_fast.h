#pragma once
/// \file PreTrainedTokenizerFast: a model folder's tokenizer.json behind the Tokenizer interface,
/// with what transformers reads beside it: tokenizer_config.json and special_tokens_map.json
/// (bos/eos/unk/sep/pad/cls/mask, model_max_length, padding_side, truncation_side,
/// clean_up_tokenization_spaces, tokenizer_class). Saving writes the three files so that
/// transformers' AutoTokenizer loads them back with the same ids.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/models/tokenizers/pipeline/pipeline_tokenizer.h>
#include <ctrainer/models/tokenizers/tokenizer.h>

namespace ctrainer {

class PreTrainedTokenizerFast : public Tokenizer {
 public:
  /// From `path`: a folder holding tokenizer.json, or the tokenizer.json file itself (its
  /// folder's tokenizer_config.json and special_tokens_map.json are read when present).
  static std::shared_ptr<PreTrainedTokenizerFast> from_pretrained(const std::string& path);

  std::string tokenizer_class() const override { return class_name_; }
  std::vector<std::string> tokenize(std::string_view text) const override;
  Encoding encode(std::string_view text, std::optional<std::string_view> pair = std::nullopt,
                  const EncodeOptions& options = {}) const override;
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false,
                     bool clean_up_tokenization_spaces = true) const override;
  std::optional<int64_t> token_to_id(std::string_view token) const override;
  std::string id_to_token(int64_t id) const override;
  int64_t vocab_size() const override { return pipeline_->vocab_size(); }
  SpecialTokens special_tokens() const override { return special_; }
  bool is_special_id(int64_t id) const override;
  Side padding_side() const override { return padding_side_; }
  void save_pretrained(const std::string& dir) const override;
  nlohmann::json fingerprint() const override;

  /// The underlying tokenizer.json pipeline.
  const tokenizers::PipelineTokenizer& pipeline() const { return *pipeline_; }
  /// tokenizer_config.json's model_max_length, when it names a real limit.
  std::optional<int64_t> model_max_length() const { return model_max_length_; }

 private:
  PreTrainedTokenizerFast() = default;

  std::shared_ptr<const tokenizers::PipelineTokenizer> pipeline_;
  std::string class_name_ = "PreTrainedTokenizerFast";
  nlohmann::json config_ = nlohmann::json::object();
  SpecialTokens special_;
  std::optional<int64_t> model_max_length_;
  Side padding_side_ = Side::kRight, truncation_side_ = Side::kRight;
  bool clean_up_tokenization_spaces_ = false;
};

}  // namespace ctrainer
