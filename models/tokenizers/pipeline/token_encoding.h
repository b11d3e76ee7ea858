#pragma once
/// \file TokenEncoding: one sequence's (or a pair's) tokens with everything HF tokenizers'
/// Encoding carries (ids, type ids, tokens, character offsets, special-token and attention
/// masks, words, the windows truncation cut off), and the operations on it: truncating a
/// pair with a stride, merging, padding.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>
#include <ctrainer/models/tokenizers/pipeline/pre_tokenized_string.h>

namespace ctrainer::tokenizers {

struct TokenEncoding {
  std::vector<int64_t> ids, type_ids;
  std::vector<std::string> tokens;
  std::vector<Offsets> offsets;
  std::vector<int64_t> special_tokens_mask, attention_mask;
  std::vector<std::optional<int64_t>> words;
  /// The windows truncation cut off (HF's Encoding.overflowing): each holds `stride` tokens of
  /// the window before it. Merging a pair combines the windows of both as HF's merge_with
  /// does, so an entry may carry its own overflowing.
  std::vector<TokenEncoding> overflowing;

  size_t size() const { return ids.size(); }
  /// From the model's tokens of one sequence, all with `type_id`.
  static TokenEncoding from_tokens(const std::vector<PositionedToken>& tokens, int64_t type_id);
  /// Special tokens (offsets (0, 0), special mask 1, no word).
  static TokenEncoding special(const std::vector<int64_t>& ids,
                               const std::vector<std::string>& tokens, int64_t type_id);
  /// Appends `other`'s tokens (not its overflowing).
  void append(const TokenEncoding& other);
  /// HF's merge_with: appends `pair` and combines the overflowing windows of both (each of
  /// ours with `pair` and with each of its windows, then ourself with each of its windows).
  void merge_with(const TokenEncoding& pair);
  /// HF's Encoding::merge: the parts merged in order, starting from an empty encoding.
  static TokenEncoding merge(const std::vector<TokenEncoding>& parts);
  /// Keeps the first (or, from the left, last) `length` tokens; what is cut goes to
  /// `overflowing` in windows of `length` tokens that overlap by `stride` (HF's truncate).
  /// Throws ArgumentError when `stride` >= `length` > 0.
  void truncate(size_t length, size_t stride, bool from_left);
};

enum class TruncationStrategy { kLongestFirst, kOnlyFirst, kOnlySecond };

struct TruncationParams {
  size_t max_length = 512;
  TruncationStrategy strategy = TruncationStrategy::kLongestFirst;
  bool from_left = false;  ///< truncation_side "left"
  size_t stride = 0;       ///< tokens each overflowing window repeats from the one before
};

/// Shortens `first` (and `second`) to at most `params.max_length` tokens together, as HF's
/// truncate_encodings; throws ArgumentError when the chosen sequence cannot lose enough.
void truncate_encodings(TokenEncoding& first, TokenEncoding* second,
                        const TruncationParams& params);

struct PaddingParams {
  std::optional<size_t> length;  ///< nullopt: the longest of the batch
  std::optional<size_t> pad_to_multiple_of;
  bool left = false;
  int64_t pad_id = 0, pad_type_id = 0;
  std::string pad_token = "[PAD]";
};

/// Pads each encoding to the padding length (the batch's longest or a fixed length, rounded up
/// to a multiple), and their overflowing windows to the same length; longer encodings are
/// left alone.
void pad_encodings(std::vector<TokenEncoding>& batch, const PaddingParams& params);

}  // namespace ctrainer::tokenizers
