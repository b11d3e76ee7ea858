#pragma once
/// \file DataCollatorForLanguageModeling: batches for causal LMs (labels = inputs, pads ignored)
/// and masked LMs (BERT's 80/10/10 token masking, optionally by whole words), as transformers 5's
/// DataCollatorForLanguageModeling builds them.
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include <ATen/core/Generator.h>

#include <ctrainer/trainer/data/collator.h>

namespace ctrainer {

/// Options of DataCollatorForLanguageModeling (HF's argument names and defaults); the tokenizer's
/// part is given as ids.
struct LanguageModelingCollatorOptions {
  /// Masked LM (true) or causal LM (false: labels are the inputs with pads set to -100).
  bool mlm = true;
  /// Mask whole words: a word is chosen with mlm_probability through its first token and all its
  /// tokens are masked (always with the mask token, as HF forces mask_replace_prob to 1). Needs
  /// each example's "offset_mapping" [T, 2] (a word continues where the previous token ended).
  bool whole_word_mask = false;
  double mlm_probability = 0.15;
  /// Share of the chosen tokens replaced by the mask token...
  double mask_replace_prob = 0.8;
  /// ...and by a random token of the vocabulary; the rest stay unchanged.
  double random_replace_prob = 0.1;
  /// Round the padded length up to a multiple of this.
  std::optional<int64_t> pad_to_multiple_of;
  /// The tokenizer's pad token (batches are always padded, so it is required, as in HF).
  std::optional<int64_t> pad_token_id;
  /// Pad on the left (the tokenizer's padding_side) instead of the right.
  bool pad_left = false;
  /// The tokenizer's mask token (required with mlm).
  std::optional<int64_t> mask_token_id;
  /// len(tokenizer): random replacements are drawn from [0, vocabulary_size).
  int64_t vocabulary_size = 0;
  /// The tokenizer's special ids (all_special_ids), never chosen for masking in examples that
  /// carry no "special_tokens_mask".
  std::vector<int64_t> special_token_ids;
  /// Seed of the masking generator; unset: the global generator's seed (set_seed).
  std::optional<uint64_t> seed;
};

/// The masked inputs and their labels (-100 where nothing is to be predicted).
struct MaskedTokens {
  at::Tensor input_ids;
  at::Tensor labels;
};

/// HF's torch_mask_tokens on a padded batch: `input_ids` [B, T]; `no_mask` [B, T] (bool: special
/// tokens and padding); `offset_mapping` [B, T, 2], required with whole_word_mask. The draws are
/// transformers' own, in its order, from `generator`: the same generator state gives the same
/// masks as transformers with a torch.Generator in that state.
MaskedTokens mask_tokens(const at::Tensor& input_ids, const at::Tensor& no_mask,
                         const at::Tensor& offset_mapping,
                         const LanguageModelingCollatorOptions& options, at::Generator generator);

/// Pads the examples' 1-D "input_ids" (with pad_token_id), "attention_mask", "token_type_ids",
/// "special_tokens_mask" (with 1: padding is special) and "offset_mapping" [T, 2], drops their
/// "labels", then makes the labels: mlm = mask_tokens(); causal = input_ids with pad ids set to
/// -100. "special_tokens_mask" and "offset_mapping" are consumed, not returned.
class DataCollatorForLanguageModeling : public DataCollator {
 public:
  /// Throws ArgumentError (HF's checks) when mlm has no mask token or a probability is outside
  /// [0, 1], when mask_replace_prob + random_replace_prob > 1, when whole_word_mask is asked
  /// without mlm, or when there is no pad token.
  explicit DataCollatorForLanguageModeling(LanguageModelingCollatorOptions options);

  /// Draws from one generator seeded once, batch after batch, as HF's collator with `seed` does.
  Batch operator()(const std::vector<Example>& examples) const override;
  /// Draws from a generator seeded by (seed, origin): a batch gets the same masks whichever
  /// loader thread builds it and in a resumed run, unlike HF's single stream.
  Batch collate(const std::vector<Example>& examples, const BatchOrigin& origin) const override;

  const LanguageModelingCollatorOptions& options() const { return options_; }

 private:
  Batch build(const std::vector<Example>& examples, at::Generator generator) const;

  LanguageModelingCollatorOptions options_;
  mutable std::mutex stream_mutex_;
  mutable std::optional<at::Generator> stream_;
};

}  // namespace ctrainer
