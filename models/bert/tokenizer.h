#pragma once
/// \file BertTokenizer: text -> input_ids / token_type_ids / attention_mask for BERT models,
/// matching Hugging Face's BertTokenizerFast (the Rust tokenizers) on the bert-base vocabularies.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ctrainer/models/bert/basic_tokenizer.h>
#include <ctrainer/models/bert/vocab.h>
#include <ctrainer/models/bert/wordpiece.h>

namespace ctrainer {

/// Revision of BertTokenizer's output: raised whenever the same text, vocabulary and options
/// encode differently than before (a fix), so that caches of tokenized data keyed by it are not
/// reused. 2: longest_first truncation of pairs as the Rust tokenizers do it.
inline constexpr int kBertTokenizerRevision = 2;

/// Options of BertTokenizer: do_lower_case, strip_accents, tokenize_chinese_chars, never_split.
using BertTokenizerOptions = BasicTokenizerOptions;

/// Which sequence loses tokens when an encoding is longer than max_length (HF's `truncation`).
enum class Truncation {
  kNone,  ///< Never truncate.
  /// From the ends, as the Rust tokenizers do: a pair keeps the shorter sequence whole when the
  /// longer one can take the rest; otherwise each gets half, the odd token to the longer one
  /// (the second on a tie).
  kLongestFirst,
  kOnlyFirst,   ///< From the end of the first sequence only.
  kOnlySecond,  ///< From the end of the second sequence only (pairs only).
};

/// How an encoding is padded with [PAD] on the right (HF's `padding`).
enum class Padding {
  kNone,       ///< No padding.
  kLongest,    ///< To the longest sequence of the call: for one encoding, its own length.
  kMaxLength,  ///< To max_length.
};

/// Options of BertTokenizer::encode (the arguments of HF's `tokenizer(text, pair, ...)`).
struct EncodeOptions {
  /// Length limit including the special tokens; required by truncation and Padding::kMaxLength.
  std::optional<int64_t> max_length;
  Truncation truncation = Truncation::kNone;
  Padding padding = Padding::kNone;
  /// When padding, round the padded length up to a multiple of this.
  std::optional<int64_t> pad_to_multiple_of;
  /// Add [CLS] ... [SEP] (... [SEP]).
  bool add_special_tokens = true;
};

/// Model inputs of one text or pair.
struct Encoding {
  std::vector<int64_t> input_ids;
  std::vector<int64_t> token_type_ids;  ///< 0 for [CLS], the first text and its [SEP]; 1 after.
  std::vector<int64_t> attention_mask;  ///< 1 for tokens, 0 for padding.
};

/// BERT WordPiece tokenizer. Special tokens written in the text ("[SEP]", case-sensitive) stay
/// single tokens, as in HF. Thread-safe for concurrent const calls.
class BertTokenizer {
 public:
  /// Loads `vocab_path` (see Vocab::load); throws ArgumentError naming the file when it lacks
  /// [PAD], [UNK], [CLS], [SEP] or [MASK].
  static BertTokenizer from_vocab_file(const std::string& vocab_path,
                                       BertTokenizerOptions options = {});
  explicit BertTokenizer(Vocab vocab, BertTokenizerOptions options = {});

  /// Word pieces of `text` (no [CLS]/[SEP] added). Throws ArgumentError on invalid UTF-8.
  std::vector<std::string> tokenize(std::string_view text) const;
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
                  const EncodeOptions& options = {}) const;

  /// Text of `ids`: pieces joined by spaces with " ##" joins removed, special tokens kept as
  /// separate words unless skipped, then HF's clean-up (" ." -> ".", " n't" -> "n't", ...).
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false,
                     bool clean_up_tokenization_spaces = true) const;

  /// Whether `id` is one of [PAD], [UNK], [CLS], [SEP], [MASK].
  bool is_special_id(int64_t id) const;

  const Vocab& vocab() const { return *vocab_; }
  const BertTokenizerOptions& options() const { return basic_.options(); }
  int64_t vocab_size() const { return vocab_->size(); }
  int64_t pad_token_id() const { return pad_id_; }
  int64_t unk_token_id() const { return unk_id_; }
  int64_t cls_token_id() const { return cls_id_; }
  int64_t sep_token_id() const { return sep_id_; }
  int64_t mask_token_id() const { return mask_id_; }

 private:
  void append_ids(std::string_view text, std::vector<int64_t>& ids) const;

  // Shared and immutable: copies of the tokenizer keep the wordpiece tokenizer's reference valid.
  std::shared_ptr<const Vocab> vocab_;
  BasicTokenizer basic_;
  WordpieceTokenizer wordpiece_;
  int64_t pad_id_ = 0, unk_id_ = 0, cls_id_ = 0, sep_id_ = 0, mask_id_ = 0;
};

/// Parses "longest_first", "only_first", "only_second" or "none"/"do_not_truncate".
Truncation parse_truncation(std::string_view name);
/// Parses "longest", "max_length" or "none"/"do_not_pad".
Padding parse_padding(std::string_view name);

}  // namespace ctrainer
