#pragma once
/// \file The count a token-level loss is divided by (HF's num_items_in_batch): the label tokens
/// of a whole accumulation window, so that k micro-batches give the gradient of one batch of all
/// their tokens however unevenly the tokens fall into the micro-batches.
#include <cstdint>
#include <vector>

#include <ctrainer/core/batch.h>

namespace ctrainer {

/// Label tokens that are targets in `window`'s batches: the elements of each "labels" that are
/// not -100, without position 0 of each row when `shifts_labels` (a causal LM predicts label
/// t+1 at position t, so the first label is never a target), as transformers 5.24 counts them;
/// a batch's "shift_labels" (already shifted) count as they are. Batches without "labels" count
/// nothing.
int64_t count_label_tokens(const std::vector<Batch>& window, bool shifts_labels);

}  // namespace ctrainer
