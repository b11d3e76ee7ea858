#include <ctrainer/models/tokenizers/pipeline/pretrained_tokenizer_fast.h>

#include <map>

#include <ctrainer/core/content_hash.h>
#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/models/tokenizers/pipeline/bpe_vocab_files.h>
#include <ctrainer/models/tokenizers/pipeline/post_processors.h>
#include <ctrainer/models/tokenizers/pipeline/sentencepiece_files.h>

namespace ctrainer {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kFastTokenizerRevision = 1;  // bump when the same files tokenize differently

/// A special token entry of tokenizer_config.json / special_tokens_map.json: a string, or
/// an AddedToken object with "content" (and lstrip, rstrip, single_word, normalized).
std::optional<tokenizers::AddedToken> special_token(const json& config, const char* key,
                                                    const fs::path& file) {
  if (!config.contains(key) || config.at(key).is_null()) return std::nullopt;
  const json& v = config.at(key);
  tokenizers::AddedToken token;
  token.normalized = false;
  if (v.is_string()) {
    token.content = v.get<std::string>();
  } else if (v.is_object() && v.contains("content") && v.at("content").is_string()) {
    token.content = v.at("content").get<std::string>();
    const auto flag = [&](const char* name, bool fallback) {
      return v.contains(name) && v.at(name).is_boolean() ? v.at(name).get<bool>() : fallback;
    };
    token.lstrip = flag("lstrip", false);
    token.rstrip = flag("rstrip", false);
    token.single_word = flag("single_word", false);
    token.normalized = flag("normalized", false);
  } else {
    throw ArgumentError(file.string() + ": \"" + key + "\" must be a token string or an object " +
                        "with \"content\", got " + v.dump());
  }
  if (token.content.empty()) throw ArgumentError(file.string() + ": \"" + key + "\" is empty");
  return token;
}

/// The special tokens transformers' tokenizer classes default to when their config names none.
const std::map<std::string, std::map<std::string, std::string>>& class_defaults() {
  static const std::map<std::string, std::map<std::string, std::string>> defaults = {
      {"GPT2Tokenizer",
       {{"unk_token", "<|endoftext|>"},
        {"bos_token", "<|endoftext|>"},
        {"eos_token", "<|endoftext|>"}}},
      {"RobertaTokenizer",
       {{"bos_token", "<s>"},
        {"eos_token", "</s>"},
        {"sep_token", "</s>"},
        {"cls_token", "<s>"},
        {"unk_token", "<unk>"},
        {"pad_token", "<pad>"},
        {"mask_token", "<mask>"}}},
      {"BertTokenizer",
       {{"unk_token", "[UNK]"},
        {"sep_token", "[SEP]"},
        {"pad_token", "[PAD]"},
        {"cls_token", "[CLS]"},
        {"mask_token", "[MASK]"}}},
      {"LlamaTokenizer", {{"unk_token", "<unk>"}, {"bos_token", "<s>"}, {"eos_token", "</s>"}}},
      {"T5Tokenizer", {{"unk_token", "<unk>"}, {"eos_token", "</s>"}, {"pad_token", "<pad>"}}},
  };
  return defaults;
}

Side side_option(const json& config, const char* key, const fs::path& file,
                 Side fallback = Side::kRight) {
  if (!config.contains(key) || config.at(key).is_null()) return fallback;
  const json& v = config.at(key);
  if (v == "right") return Side::kRight;
  if (v == "left") return Side::kLeft;
  throw ArgumentError(file.string() + ": \"" + key + "\" must be \"right\" or \"left\", got " +
                      v.dump());
}

/// tokenizer_config.json's added_tokens_decoder ({"id": AddedToken}), in id order, as
/// transformers adds those the tokenizer does not hold yet; an entry that cannot take its id
/// is refused (transformers would rename the vocabulary).
void register_added_tokens_decoder(tokenizers::PipelineTokenizer& pipeline, const json& config,
                                   const fs::path& file) {
  if (!config.contains("added_tokens_decoder")) return;
  const json& entries = config.at("added_tokens_decoder");
  if (!entries.is_object())
    throw ArgumentError(file.string() +
                        ": \"added_tokens_decoder\" must be an object of id -> "
                        "token, got " +
                        entries.dump().substr(0, 80));
  std::map<int64_t, tokenizers::AddedToken> by_id;
  for (const auto& [key, value] : entries.items()) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
    }
    if (used != key.size() || id < 0)
      throw ArgumentError(file.string() + ": added_tokens_decoder key \"" + key +
                          "\" is not a token id");
    const json holder = {{"token", value}};
    auto token = special_token(holder, "token", file);
    if (!token) continue;
    token->special = value.is_object() && value.value("special", false);
    by_id[id] = *token;
  }
  for (auto& [id, token] : by_id) {
    if (pipeline.added_vocabulary().token_to_id(token.content)) continue;  // already added
    if (pipeline.token_to_id(token.content)) {
      if (*pipeline.token_to_id(token.content) != id)
        throw ArgumentError(file.string() + ": added_tokens_decoder puts \"" + token.content +
                            "\" at id " + std::to_string(id) + " but the tokenizer has it at " +
                            std::to_string(*pipeline.token_to_id(token.content)) +
                            "; save the tokenizer with transformers so that tokenizer.json "
                            "holds the renamed vocabulary");
      pipeline.add_token(token);
      continue;
    }
    const int64_t got = pipeline.add_token(token);
    if (got != id)
      throw ArgumentError(file.string() + ": added_tokens_decoder puts \"" + token.content +
                          "\" at id " + std::to_string(id) + ", which the vocabulary gives " +
                          "to another token (the next free id is " + std::to_string(got) +
                          "); save the tokenizer with transformers so that tokenizer.json "
                          "holds the renamed vocabulary");
  }
}

/// tokenizer_config.json's additional_special_tokens (extra_special_tokens in transformers 5):
/// each one the tokenizer lacks is added as a special token.
void register_extra_special_tokens(tokenizers::PipelineTokenizer& pipeline, const json& config,
                                   const fs::path& file) {
  for (const char* key : {"additional_special_tokens", "extra_special_tokens"}) {
    if (!config.contains(key) || config.at(key).is_null()) continue;
    const json& list = config.at(key);
    if (!list.is_array())
      throw ArgumentError(file.string() + ": \"" + key + "\" must be a list of tokens, got " +
                          list.dump().substr(0, 80));
    for (const auto& value : list) {
      const json holder = {{"token", value}};
      auto token = special_token(holder, "token", file);
      if (token && !pipeline.added_vocabulary().token_to_id(token->content))
        pipeline.add_special_token(*token);
    }
  }
}

json read_optional(const fs::path& file) {
  if (!fs::is_regular_file(file)) return json::object();
  json j;
  try {
    j = read_json_file(file, "tokenizer file");
  } catch (const std::runtime_error& e) {  // a user's file: bad input, not a fault
    throw ArgumentError(e.what());
  }
  if (!j.is_object()) throw ArgumentError(file.string() + " must hold a JSON object");
  return j;
}

}  // namespace

std::shared_ptr<PreTrainedTokenizerFast> PreTrainedTokenizerFast::from_pretrained(
    const std::string& path) {
  const fs::path given(path);
  const fs::path file = fs::is_directory(given) ? given / "tokenizer.json" : given;
  const fs::path folder = file.parent_path();
  std::shared_ptr<PreTrainedTokenizerFast> t(new PreTrainedTokenizerFast());

  const fs::path config_file = folder / "tokenizer_config.json";
  const fs::path map_file = folder / "special_tokens_map.json";
  t->config_ = read_optional(config_file);
  const json map = read_optional(map_file);
  if (t->config_.contains("tokenizer_class") && t->config_.at("tokenizer_class").is_string())
    t->class_name_ = t->config_.at("tokenizer_class").get<std::string>();

  // tokenizer.json, else the vocab.json + merges.txt or the SentencePiece model transformers
  // builds one from.
  std::shared_ptr<tokenizers::PipelineTokenizer> pipeline;
  std::optional<tokenizers::SentencePieceTokenizer> sentencepiece;
  if (!fs::is_regular_file(file) && fs::is_directory(given)) {
    if (auto built = tokenizers::tokenizer_json_from_bpe_files(folder, t->config_)) {
      pipeline =
          std::make_shared<tokenizers::PipelineTokenizer>(*built, (folder / "vocab.json").string());
    } else if ((sentencepiece =
                    tokenizers::tokenizer_from_sentencepiece(folder, t->config_, t->class_name_))) {
      pipeline = std::make_shared<tokenizers::PipelineTokenizer>(
          sentencepiece->tokenizer_json, sentencepiece->model_file.string());
    }
  }
  if (!pipeline)
    pipeline = std::make_shared<tokenizers::PipelineTokenizer>(
        tokenizers::PipelineTokenizer::read_file(file), file.string());

  // As transformers registers them: tokenizer_config.json's added_tokens_decoder, the named
  // special tokens, then the extra special tokens.
  register_added_tokens_decoder(*pipeline, t->config_, config_file);
  // The special tokens: special_tokens_map.json's (read when the config has no
  // added_tokens_decoder, and winning over the config, as in transformers), the config's, else
  // the class's (or the SentencePiece model's) defaults. As transformers, one the tokenizer
  // lacks becomes a new special added token.
  std::string base_class = t->class_name_;
  if (base_class.ends_with("Fast")) base_class.resize(base_class.size() - 4);
  const auto defaults = class_defaults().find(base_class);
  const bool map_wins = !t->config_.contains("added_tokens_decoder");
  const auto special = [&](const char* key) -> std::optional<std::string> {
    std::optional<tokenizers::AddedToken> token;
    if (map_wins && map.contains(key)) {
      token = special_token(map, key, map_file);
    } else if (t->config_.contains(key)) {
      token = special_token(t->config_, key, config_file);
    } else if (sentencepiece && sentencepiece->default_special_tokens.count(key)) {
      token = tokenizers::AddedToken{
          0, sentencepiece->default_special_tokens.at(key), false, false, false, false, true};
    } else if (defaults != class_defaults().end() && defaults->second.count(key)) {
      token = tokenizers::AddedToken{0, defaults->second.at(key), false, false, false, false, true};
    }
    if (!token) return std::nullopt;
    pipeline->add_special_token(*token);
    return token->content;
  };
  t->special_.bos = special("bos_token");
  t->special_.eos = special("eos_token");
  t->special_.unk = special("unk_token");
  t->special_.sep = special("sep_token");
  t->special_.pad = special("pad_token");
  t->special_.cls = special("cls_token");
  t->special_.mask = special("mask_token");
  register_extra_special_tokens(*pipeline, t->config_, config_file);

  if (sentencepiece) {
    const auto with_id =
        [&](const std::optional<std::string>& token) -> std::optional<tokenizers::TokenAndId> {
      if (!token) return std::nullopt;
      return tokenizers::TokenAndId{*token, *pipeline->token_to_id(*token)};
    };
    pipeline->set_post_processor(tokenizers::post_processor_from_json(
        tokenizers::sentencepiece_post_processor(
            *sentencepiece, t->config_, with_id(t->special_.bos), with_id(t->special_.eos)),
        "post_processor"));
  }

  // transformers 5 (TokenizersBackend) leaves add_bos_token / add_eos_token of a loaded
  // tokenizer_config.json unapplied for these classes; so does this reader (the parity test
  // tokenizer_auto_parity.py checks it), and a missing post-processor means none.
  t->pipeline_ = std::move(pipeline);

  if (t->config_.contains("model_max_length") && t->config_.at("model_max_length").is_number()) {
    // transformers writes 1e30 (VERY_LARGE_INTEGER) when the model has no limit.
    const double limit = t->config_.at("model_max_length").get<double>();
    if (limit > 0 && limit < 1e15) t->model_max_length_ = static_cast<int64_t>(limit);
  }
  const Side class_side = (sentencepiece && sentencepiece->default_padding_side == "left") ||
                                  base_class == "LlamaTokenizer" || base_class == "XLNetTokenizer"
                              ? Side::kLeft
                              : Side::kRight;  // transformers' class attribute padding_side
  t->padding_side_ = side_option(t->config_, "padding_side", config_file, class_side);
  t->truncation_side_ = side_option(t->config_, "truncation_side", config_file);
  if (t->config_.contains("clean_up_tokenization_spaces") &&
      t->config_.at("clean_up_tokenization_spaces").is_boolean())
    t->clean_up_tokenization_spaces_ = t->config_.at("clean_up_tokenization_spaces").get<bool>();
  return t;
}

std::vector<std::string> PreTrainedTokenizerFast::tokenize(std::string_view text) const {
  return pipeline_->encode(std::string(text), nullptr, false).tokens;
}

namespace {

/// The pipeline's encoding as the Tokenizer interface's, overflowing windows included.
Encoding to_encoding(tokenizers::TokenEncoding e) {
  Encoding out;
  out.input_ids = std::move(e.ids);
  out.token_type_ids = std::move(e.type_ids);
  out.attention_mask = std::move(e.attention_mask);
  out.tokens = std::move(e.tokens);
  out.special_tokens_mask = std::move(e.special_tokens_mask);
  for (const auto& [start, end] : e.offsets)
    out.offsets.emplace_back(static_cast<int64_t>(start), static_cast<int64_t>(end));
  for (auto& window : e.overflowing) out.overflowing.push_back(to_encoding(std::move(window)));
  return out;
}

}  // namespace

Encoding PreTrainedTokenizerFast::encode(std::string_view text,
                                         std::optional<std::string_view> pair,
                                         const EncodeOptions& options) const {
  std::optional<int64_t> max_length = options.max_length;
  if (!max_length &&
      (options.truncation != Truncation::kNone || options.padding == Padding::kMaxLength))
    max_length = model_max_length_;
  if (options.truncation != Truncation::kNone && !max_length)
    throw ArgumentError(
        "truncation needs max_length: this tokenizer's tokenizer_config.json "
        "sets no model_max_length");
  if (options.stride < 0)
    throw ArgumentError("stride must be 0 or more, got " + std::to_string(options.stride));
  if ((options.stride > 0 || options.return_overflowing_tokens) &&
      options.truncation == Truncation::kNone)
    throw ArgumentError(
        "stride and return_overflowing_tokens need truncation: the overflowing windows are "
        "what truncation cuts off");
  std::optional<tokenizers::TruncationParams> truncation;
  if (options.truncation != Truncation::kNone) {
    tokenizers::TruncationParams params;
    params.max_length = static_cast<size_t>(*max_length);
    params.strategy = options.truncation == Truncation::kLongestFirst
                          ? tokenizers::TruncationStrategy::kLongestFirst
                      : options.truncation == Truncation::kOnlyFirst
                          ? tokenizers::TruncationStrategy::kOnlyFirst
                          : tokenizers::TruncationStrategy::kOnlySecond;
    params.from_left = options.truncation_side.value_or(truncation_side_) == Side::kLeft;
    params.stride = static_cast<size_t>(options.stride);
    truncation = params;
  }
  const std::string first(text);
  const std::string second = pair ? std::string(*pair) : std::string();
  tokenizers::TokenEncoding e =
      pipeline_->encode(first, pair ? &second : nullptr, options.add_special_tokens, truncation);
  if (options.padding != Padding::kNone) {
    if (options.padding == Padding::kMaxLength && !max_length)
      throw ArgumentError("padding to max_length needs max_length");
    tokenizers::PaddingParams padding;
    if (options.padding == Padding::kMaxLength) padding.length = static_cast<size_t>(*max_length);
    if (options.pad_to_multiple_of && *options.pad_to_multiple_of > 0)
      padding.pad_to_multiple_of = static_cast<size_t>(*options.pad_to_multiple_of);
    padding.left = options.padding_side.value_or(padding_side_) == Side::kLeft;
    padding.pad_id = pad_id();
    padding.pad_token = *special_.pad;
    std::vector<tokenizers::TokenEncoding> one{std::move(e)};
    tokenizers::pad_encodings(one, padding);
    e = std::move(one[0]);
  }
  if (!options.return_overflowing_tokens) e.overflowing.clear();
  return to_encoding(std::move(e));
}

std::string PreTrainedTokenizerFast::decode(const std::vector<int64_t>& ids,
                                            bool skip_special_tokens,
                                            bool clean_up_tokenization_spaces) const {
  std::string text = pipeline_->decode(ids, skip_special_tokens);
  // transformers cleans up only when the tokenizer's config asks for it (its default since 4.45).
  if (!(clean_up_tokenization_spaces && clean_up_tokenization_spaces_)) return text;
  return tokenizers::clean_up_tokenization(std::move(text));
}

std::optional<int64_t> PreTrainedTokenizerFast::token_to_id(std::string_view token) const {
  return pipeline_->token_to_id(std::string(token));
}

std::string PreTrainedTokenizerFast::id_to_token(int64_t id) const {
  auto token = pipeline_->id_to_token(id);
  if (!token)
    throw ArgumentError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                        std::to_string(vocab_size()));
  return *token;
}

bool PreTrainedTokenizerFast::is_special_id(int64_t id) const {
  const auto token = pipeline_->id_to_token(id);
  if (!token) return false;
  if (pipeline_->added_vocabulary().is_special(*token)) return true;
  for (const auto* s : {&special_.pad, &special_.unk, &special_.cls, &special_.sep, &special_.mask,
                        &special_.bos, &special_.eos})
    if (*s && **s == *token) return true;
  return false;
}

void PreTrainedTokenizerFast::save_pretrained(const std::string& dir) const {
  const fs::path out(dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  write_json_file(out / "tokenizer.json", pipeline_->to_json());
  json config = config_;
  config["tokenizer_class"] = class_name_;
  json map = json::object();
  const std::pair<const char*, const std::optional<std::string>*> named[] = {
      {"bos_token", &special_.bos},  {"eos_token", &special_.eos}, {"unk_token", &special_.unk},
      {"sep_token", &special_.sep},  {"pad_token", &special_.pad}, {"cls_token", &special_.cls},
      {"mask_token", &special_.mask}};
  for (const auto& [key, value] : named)
    if (*value) {
      config[key] = **value;
      map[key] = **value;
    }
  if (model_max_length_) config["model_max_length"] = *model_max_length_;
  config["padding_side"] = padding_side_ == Side::kLeft ? "left" : "right";
  config["truncation_side"] = truncation_side_ == Side::kLeft ? "left" : "right";
  config["clean_up_tokenization_spaces"] = clean_up_tokenization_spaces_;
  write_json_file(out / "tokenizer_config.json", config);
  write_json_file(out / "special_tokens_map.json", map);
}

json PreTrainedTokenizerFast::fingerprint() const {
  ContentHasher hasher;
  hasher.update_field(pipeline_->to_json().dump());
  return {{"tokenizer_json_hash", to_hex(hasher.digest())},
          {"vocab_size", vocab_size()},
          {"tokenizer_revision", kFastTokenizerRevision},
          {"padding_side", padding_side_ == Side::kLeft ? "left" : "right"},
          {"truncation_side", truncation_side_ == Side::kLeft ? "left" : "right"}};
}

}  // namespace ctrainer
