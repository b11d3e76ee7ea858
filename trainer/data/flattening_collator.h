#pragma once
/// \file DataCollatorWithFlattening: padding-free batches for decoders (HF's
/// DataCollatorWithFlattening).
#include <cstdint>

#include <ctrainer/trainer/data/collator.h>

namespace ctrainer {

/// Options of DataCollatorWithFlattening (HF's argument names and defaults).
struct FlatteningCollatorOptions {
  /// Return "position_ids", which restart at position_ids_start for every sequence; the
  /// decoders read them to keep attention inside each sequence, so without them the packed
  /// sequences attend to one another.
  bool return_position_ids = true;
  /// The label given to the first token of every sequence, so that no sequence learns to predict
  /// the start of the next one.
  int64_t separator_id = -100;
  /// Return "seq_idx" (int32), the index of the sequence each token belongs to.
  bool return_seq_idx = false;
  /// The position id of the first token of every sequence.
  int64_t position_ids_start = 0;
};

/// Concatenates the batch's sequences into one row [1, total_tokens] without padding:
/// "input_ids", "labels" (each example's "labels", else its input_ids, with the first token of
/// every sequence replaced by separator_id) and "position_ids". Empty examples are dropped.
/// Throws std::invalid_argument when every example is empty or one lacks "input_ids", or when
/// an example's "labels" differ in length from its input_ids.
class DataCollatorWithFlattening : public DataCollator {
 public:
  explicit DataCollatorWithFlattening(FlatteningCollatorOptions options = {});
  Batch operator()(const std::vector<Example>& examples) const override;
  const FlatteningCollatorOptions& options() const { return options_; }

 private:
  FlatteningCollatorOptions options_;
};

}  // namespace ctrainer
