#pragma once
/// \file DataCollatorForSeq2Seq: batches of (source, target) token sequences for
/// encoder-decoder models, as transformers 5's DataCollatorForSeq2Seq builds them.
#include <cstdint>
#include <optional>

#include <ctrainer/trainer/data/collator.h>

namespace ctrainer {

/// Options of DataCollatorForSeq2Seq (HF's argument names); the tokenizer's and the model's parts
/// are given as ids.
struct Seq2SeqCollatorOptions {
  /// The tokenizer's pad token, which pads input_ids.
  int64_t pad_token_id = 0;
  /// Pad on the left (the tokenizer's padding_side) instead of the right; labels too.
  bool pad_left = false;
  /// padding="max_length": pad inputs and labels to this length instead of the longest.
  std::optional<int64_t> max_length;
  /// Round the padded lengths up to a multiple of this.
  std::optional<int64_t> pad_to_multiple_of;
  /// What pads the labels (ignored by the loss).
  int64_t label_pad_token_id = -100;
  /// With a model (HF's `model=`): decoder_input_ids are the labels shifted right with this
  /// start token (the model's prepare_decoder_input_ids_from_labels); unset: none are made.
  std::optional<int64_t> decoder_start_token_id;
  /// The model config's pad_token_id, which replaces -100 in decoder_input_ids.
  int64_t decoder_pad_token_id = 0;
};

/// Pads every 1-D key except "labels" as the tokenizer's pad() does (input_ids with
/// pad_token_id, special_tokens_mask with 1, the rest with 0) to the longest input (or
/// max_length), rounded up to pad_to_multiple_of; pads "labels" with label_pad_token_id to the
/// longest label (or max_length), rounded up likewise, on the same side; adds
/// "decoder_input_ids" when decoder_start_token_id is set. Scalar or fixed-shape keys are
/// stacked. Throws ArgumentError naming the key when an example lacks a key, a sequence is
/// longer than max_length, or fixed-shape keys differ in shape.
class DataCollatorForSeq2Seq : public DataCollator {
 public:
  explicit DataCollatorForSeq2Seq(Seq2SeqCollatorOptions options = {});
  Batch operator()(const std::vector<Example>& examples) const override;
  const Seq2SeqCollatorOptions& options() const { return options_; }

 private:
  Seq2SeqCollatorOptions options_;
};

}  // namespace ctrainer
