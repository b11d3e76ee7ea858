#pragma once
/// \file Tokenizer: the one interface every tokenizer offers (transformers' PreTrainedTokenizer
/// calls: encode, encode a pair, batches, decode, special tokens, save_pretrained), with the
/// options and results they share. WordPiece (BertTokenizer) is the first implementation;
/// tokenizers/tokenizer_registry.h finds the right one for a folder (AutoTokenizer).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer {

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

/// How an encoding is padded on the right (HF's `padding`).
enum class Padding {
  kNone,       ///< No padding.
  kLongest,    ///< To the longest sequence of the call: for one encoding, its own length.
  kMaxLength,  ///< To max_length.
};

/// Which end padding or truncation works on (HF's padding_side / truncation_side).
enum class Side { kRight, kLeft };

/// Options of Tokenizer::encode (the arguments of HF's `tokenizer(text, pair, ...)`).
struct EncodeOptions {
  /// Length limit including the special tokens; required by truncation and Padding::kMaxLength.
  std::optional<int64_t> max_length;
  Truncation truncation = Truncation::kNone;
  Padding padding = Padding::kNone;
  /// When padding, round the padded length up to a multiple of this.
  std::optional<int64_t> pad_to_multiple_of;
  /// Add the model's special tokens ([CLS] ... [SEP] for BERT).
  bool add_special_tokens = true;
  /// Where padding goes; unset: the tokenizer's padding_side (tokenizer_config.json).
  std::optional<Side> padding_side;
  /// Which end truncation cuts; unset: the tokenizer's truncation_side.
  std::optional<Side> truncation_side;
  /// With return_overflowing_tokens: how many tokens each overflowing window repeats from the
  /// window before it (HF's `stride`). Needs truncation; must be below max_length less the
  /// special tokens.
  int64_t stride = 0;
  /// Keep what truncation cut off, in Encoding::overflowing (HF's return_overflowing_tokens).
  /// Only tokenizer.json pipelines (PreTrainedTokenizerFast) produce them.
  bool return_overflowing_tokens = false;
};

/// Model inputs of one text or pair.
struct Encoding {
  std::vector<int64_t> input_ids;
  /// Segment of each token (BERT: 0 for [CLS], the first text and its [SEP]; 1 after); empty
  /// for tokenizers whose models have no segments.
  std::vector<int64_t> token_type_ids;
  std::vector<int64_t> attention_mask;  ///< 1 for tokens, 0 for padding.
  /// Filled by tokenizers that track them (tokenizer.json pipelines), else empty: each token's
  /// text, its [start, end) character offsets in its text ((0, 0) for special tokens and
  /// padding) and 1 for special tokens and padding.
  std::vector<std::string> tokens;
  std::vector<std::pair<int64_t, int64_t>> offsets;
  std::vector<int64_t> special_tokens_mask;
  /// With EncodeOptions::return_overflowing_tokens: the windows truncation cut off, each with
  /// the special tokens and padding of a whole encoding, in HF tokenizers' order (an entry of a
  /// truncated pair may hold its own overflowing, as the Rust Encoding does).
  std::vector<Encoding> overflowing;
};

/// The special tokens of a tokenizer (HF's special_tokens_map); unset ones it does not have.
struct SpecialTokens {
  std::optional<std::string> pad, unk, cls, sep, mask, bos, eos;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// transformers' class name ("BertTokenizer"), as tokenizer_config.json's tokenizer_class.
  virtual std::string tokenizer_class() const = 0;

  /// Tokens of `text`, without special tokens.
  virtual std::vector<std::string> tokenize(std::string_view text) const = 0;
  /// `text` (and `pair`) as model inputs, with special tokens, truncation and padding per
  /// `options`. Throws ArgumentError for inconsistent options and invalid UTF-8.
  virtual Encoding encode(std::string_view text,
                          std::optional<std::string_view> pair = std::nullopt,
                          const EncodeOptions& options = {}) const = 0;
  /// Encodes each text (with `pairs[i]` when `pairs` is given, one per text). Padding::kLongest
  /// pads every encoding to the longest of the batch, as HF's batch call does.
  std::vector<Encoding> encode_batch(const std::vector<std::string>& texts,
                                     const std::vector<std::string>* pairs = nullptr,
                                     const EncodeOptions& options = {}) const;

  /// Text of `ids` (HF decode).
  virtual std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false,
                             bool clean_up_tokenization_spaces = true) const = 0;
  std::vector<std::string> decode_batch(const std::vector<std::vector<int64_t>>& batch,
                                        bool skip_special_tokens = false,
                                        bool clean_up_tokenization_spaces = true) const;

  /// Vocabulary id of `token`, or nothing when it has none.
  virtual std::optional<int64_t> token_to_id(std::string_view token) const = 0;
  /// Token of `id`; throws ArgumentError outside the vocabulary.
  virtual std::string id_to_token(int64_t id) const = 0;
  virtual int64_t vocab_size() const = 0;

  virtual SpecialTokens special_tokens() const = 0;
  /// Whether `id` is one of the special tokens.
  virtual bool is_special_id(int64_t id) const = 0;
  /// Id of the padding token (DataCollatorWithPadding's pad value); throws ArgumentError when
  /// the tokenizer has none.
  int64_t pad_id() const;
  /// Where padding goes unless EncodeOptions says (tokenizer_config.json's padding_side).
  virtual Side padding_side() const { return Side::kRight; }

  /// Writes the tokenizer's files into `dir` as transformers' save_pretrained does, so that
  /// AutoTokenizer here and in transformers load them back.
  virtual void save_pretrained(const std::string& dir) const = 0;

  /// What decides the tokenizer's output: its class, revision, vocabulary hash and options.
  /// Caches of tokenized data include it in their key.
  virtual nlohmann::json fingerprint() const = 0;
};

}  // namespace ctrainer
