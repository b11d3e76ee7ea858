#include <ctrainer/models/tokenizers/pipeline/pipeline_tokenizer.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_config.h>
#include <ctrainer/models/tokenizers/pipeline/json_fields.h>
#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer::tokenizers {

using nlohmann::json;

PipelineTokenizer::PipelineTokenizer(const json& j, const std::string& source) {
  try {
    if (!j.is_object()) throw TokenizerJsonError("(root)", "expected a JSON object");
    const auto component = [&](const char* key) -> const json& {
      static const json null_value;
      const auto it = j.find(key);
      return it == j.end() ? null_value : *it;
    };
    normalizer_ = normalizer_from_json(component("normalizer"), "normalizer");
    pre_tokenizer_ = pre_tokenizer_from_json(component("pre_tokenizer"), "pre_tokenizer");
    model_ = token_model_from_json(json_field(j, "", "model"), "model");
    post_processor_ = post_processor_from_json(component("post_processor"), "post_processor");
    decoder_ = decoder_from_json(component("decoder"), "decoder");
    const json& added = component("added_tokens");
    if (!added.is_null()) added_ = AddedVocabulary(added, "added_tokens", normalizer_);
    truncation_ = component("truncation");
    padding_ = component("padding");
  } catch (const TokenizerJsonError& e) {
    throw ArgumentError(source + ": " + e.what() +
                        " (ctrainer reads the tokenizer.json format of HF tokenizers 0.13-0.23)");
  }
}

std::shared_ptr<const PipelineTokenizer> PipelineTokenizer::from_file(
    const std::filesystem::path& path) {
  return std::make_shared<const PipelineTokenizer>(read_file(path), path.string());
}

json PipelineTokenizer::read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ArgumentError("cannot read the tokenizer file " + path.string() +
                        ": check the path (a folder with tokenizer.json, or the file itself)");
  std::stringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::parse_error& e) {
    const auto at = text_position(text.str(), e.byte);
    throw ArgumentError(path.string() + ":" + std::to_string(at.line) + ":" +
                        std::to_string(at.column) + ": invalid JSON in the tokenizer file");
  } catch (const json::exception& e) {
    // The parser's errors without a position: a number too large for a double (1e400).
    throw ArgumentError(path.string() + ": invalid JSON in the tokenizer file (" + e.what() + ")");
  }
  return j;
}

TokenEncoding PipelineTokenizer::encode_single(const std::string& text, int64_t type_id) const {
  if (const auto bad = unicode::first_invalid_utf8(text))
    throw ArgumentError("invalid UTF-8 at byte " + std::to_string(*bad) +
                        " of the text; the tokenizer only accepts UTF-8 input");
  PreTokenizedString pieces = added_.extract_and_normalize(text, normalizer_.get());
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
  pieces.tokenize([&](const std::string& word) { return model_->tokenize(word); });
  return TokenEncoding::from_tokens(pieces.into_tokens(), type_id);
}

TokenEncoding PipelineTokenizer::encode(const std::string& text, const std::string* pair,
                                        bool add_special_tokens,
                                        const std::optional<TruncationParams>& truncation) const {
  TokenEncoding first = encode_single(text, 0);
  std::optional<TokenEncoding> second;
  if (pair) second = encode_single(*pair, 1);
  if (truncation) {
    TruncationParams params = *truncation;
    const size_t added = add_special_tokens ? added_special_tokens(pair != nullptr) : 0;
    if (params.max_length < added)
      throw ArgumentError("max_length " + std::to_string(params.max_length) +
                          " leaves no room for the " + std::to_string(added) +
                          " special tokens the tokenizer adds");
    params.max_length -= added;
    truncate_encodings(first, second ? &*second : nullptr, params);
  }
  std::vector<TokenEncoding> parts{std::move(first)};
  if (second) parts.push_back(std::move(*second));
  if (post_processor_) parts = post_processor_->process(std::move(parts), add_special_tokens);
  return TokenEncoding::merge(parts);
}

std::string PipelineTokenizer::decode(const std::vector<int64_t>& ids,
                                      bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    auto token = id_to_token(id);
    if (!token) continue;
    if (skip_special_tokens && added_.is_special(*token)) continue;
    tokens.push_back(std::move(*token));
  }
  if (decoder_) return decoder_->decode(std::move(tokens));
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
  return text;
}

std::optional<int64_t> PipelineTokenizer::token_to_id(const std::string& token) const {
  if (const auto id = added_.token_to_id(token)) return id;
  return model_->token_to_id(token);
}

std::optional<std::string> PipelineTokenizer::id_to_token(int64_t id) const {
  if (auto token = added_.id_to_token(id)) return token;
  return model_->id_to_token(id);
}

int64_t PipelineTokenizer::vocab_size() const {
  int64_t size = model_->vocab_size();
  for (const auto& t : added_.tokens()) size = std::max(size, t.id + 1);
  return size;
}

int64_t PipelineTokenizer::add_special_token(AddedToken token) {
  if (const auto known = added_.token_to_id(token.content);
      known && added_.is_special(token.content))
    return *known;
  token.special = true;
  return add_token(std::move(token));
}

int64_t PipelineTokenizer::add_token(AddedToken token) {
  if (const auto known = added_.token_to_id(token.content)) {
    token.id = *known;
  } else if (const auto in_model = model_->token_to_id(token.content)) {
    token.id = *in_model;
  } else {
    int64_t next = model_->vocab_size();
    for (const auto& t : added_.tokens()) next = std::max(next, t.id + 1);
    token.id = next;
  }
  const int64_t id = token.id;
  added_.add(std::move(token), normalizer_.get());
  return id;
}

size_t PipelineTokenizer::added_special_tokens(bool is_pair) const {
  return post_processor_ ? post_processor_->added_tokens(is_pair) : 0;
}

json PipelineTokenizer::to_json() const {
  const auto or_null = [](const auto& component) {
    return component ? component->to_json() : json(nullptr);
  };
  return {{"version", "1.0"},
          {"truncation", truncation_},
          {"padding", padding_},
          {"added_tokens", added_.to_json()},
          {"normalizer", or_null(normalizer_)},
          {"pre_tokenizer", or_null(pre_tokenizer_)},
          {"model", model_->to_json()},
          {"post_processor", or_null(post_processor_)},
          {"decoder", or_null(decoder_)}};
}

}  // namespace ctrainer::tokenizers
