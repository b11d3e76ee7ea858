#pragma once
/// \file BertTokenizer: text -> input_ids / token_type_ids / attention_mask for BERT models,
/// matching Hugging Face's BertTokenizerFast (the Rust tokenizers) on the bert-base vocabularies.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ctrainer/models/tokenizers/tokenizer.h>
#include <ctrainer/models/tokenizers/wordpiece/basic_tokenizer.h>
#include <ctrainer/models/tokenizers/wordpiece/vocab.h>
#include <ctrainer/models/tokenizers/wordpiece/wordpiece.h>

namespace ctrainer {

/// Revision of BertTokenizer's output: raised whenever the same text, vocabulary and options
/// encode differently than before (a fix), so that caches of tokenized data keyed by it are not
/// reused. 2: longest_first truncation of pairs as the Rust tokenizers do it.
inline constexpr int kBertTokenizerRevision = 2;

/// Options of BertTokenizer: do_lower_case, strip_accents, tokenize_chinese_chars, never_split.
using BertTokenizerOptions = BasicTokenizerOptions;

/// BERT WordPiece tokenizer. Special tokens written in the text ("[SEP]", case-sensitive) stay
/// single tokens, as in HF. Thread-safe for concurrent const calls.
class BertTokenizer : public Tokenizer {
 public:
  /// Loads a tokenizer as transformers' BertTokenizer.from_pretrained: `path`/vocab.txt (or
  /// `path` itself when it is the vocabulary file), with do_lower_case, strip_accents and
  /// tokenize_chinese_chars from tokenizer_config.json beside it where it has them, unless
  /// `do_lower_case` is given (then the file is not read). Throws ArgumentError naming the file and
  /// the fix.
  static BertTokenizer from_pretrained(const std::string& path,
                                       std::optional<bool> do_lower_case = std::nullopt);
  /// Loads `vocab_path` (see Vocab::load); throws ArgumentError naming the file when it lacks
  /// [PAD], [UNK], [CLS], [SEP] or [MASK].
  static BertTokenizer from_vocab_file(const std::string& vocab_path,
                                       BertTokenizerOptions options = {});
  explicit BertTokenizer(Vocab vocab, BertTokenizerOptions options = {});

  /// Word pieces of `text` (no [CLS]/[SEP] added). Throws ArgumentError on invalid UTF-8.
  std::vector<std::string> tokenize(std::string_view text) const override;
  /// Ids of the word pieces of `text` (what encode() puts between the special tokens).
  std::vector<int64_t> tokenize_to_ids(std::string_view text) const;

  /// Vocabulary id of `token`, or the [UNK] id.
  int64_t convert_token_to_id(std::string_view token) const;
  std::vector<int64_t> convert_tokens_to_ids(const std::vector<std::string>& tokens) const;
  /// Tokens of `ids`; throws ArgumentError for an id outside the vocabulary.
  std::vector<std::string> convert_ids_to_tokens(const std::vector<int64_t>& ids,
                                                 bool skip_special_tokens = false) const;

  /// [CLS] text [SEP] (pair [SEP]) with truncation and padding per `options`. Throws
  /// ArgumentError for inconsistent options (truncation or kMaxLength padding without
  /// max_length, kOnlySecond without a pair, max_length too small to keep a token of the
  /// truncated sequence) and invalid UTF-8.
  Encoding encode(std::string_view text, std::optional<std::string_view> pair = std::nullopt,
                  const EncodeOptions& options = {}) const override;

  /// Text of `ids`: pieces joined by spaces with " ##" joins removed, special tokens kept as
  /// separate words unless skipped, then HF's clean-up (" ." -> ".", " n't" -> "n't", ...).
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false,
                     bool clean_up_tokenization_spaces = true) const override;

  /// Whether `id` is one of [PAD], [UNK], [CLS], [SEP], [MASK].
  bool is_special_id(int64_t id) const override;

  const Vocab& vocab() const { return *vocab_; }
  const BertTokenizerOptions& options() const { return basic_.options(); }
  int64_t vocab_size() const override { return vocab_->size(); }
  int64_t pad_token_id() const { return pad_id_; }
  int64_t unk_token_id() const { return unk_id_; }
  int64_t cls_token_id() const { return cls_id_; }
  int64_t sep_token_id() const { return sep_id_; }
  int64_t mask_token_id() const { return mask_id_; }

  // The Tokenizer interface.
  std::string tokenizer_class() const override { return "BertTokenizer"; }
  std::optional<int64_t> token_to_id(std::string_view token) const override;
  std::string id_to_token(int64_t id) const override;
  SpecialTokens special_tokens() const override;
  /// vocab.txt (one token per line, by id) and tokenizer_config.json (tokenizer_class,
  /// do_lower_case, model_max_length 512 and the special tokens), as transformers writes them.
  void save_pretrained(const std::string& dir) const override;
  /// Revision, vocabulary hash and size, and the BasicTokenizer options.
  nlohmann::json fingerprint() const override;

 private:
  void append_ids(std::string_view text, std::vector<int64_t>& ids) const;

  // Shared and immutable: copies of the tokenizer keep the wordpiece tokenizer's reference valid.
  std::shared_ptr<const Vocab> vocab_;
  BasicTokenizer basic_;
  WordpieceTokenizer wordpiece_;
  int64_t pad_id_ = 0, unk_id_ = 0, cls_id_ = 0, sep_id_ = 0, mask_id_ = 0;
};

}  // namespace ctrainer
