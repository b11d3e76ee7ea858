#pragma once
// A causal-LM batch shared by the decoder model tests: two rows, the second right-padded (id 0)
// with its padding masked and its labels ignored (-100).
#include <torch/torch.h>

#include <ctrainer/core/batch.h>

namespace ctrainer::testing {

inline Batch ragged_lm_batch() {
  Batch batch;
  batch["input_ids"] = torch::tensor({{3, 5, 7, 9, 11}, {4, 6, 8, 0, 0}}, torch::kLong);
  batch["attention_mask"] = torch::tensor({{1, 1, 1, 1, 1}, {1, 1, 1, 0, 0}}, torch::kLong);
  batch["labels"] = torch::tensor({{3, 5, 7, 9, 11}, {4, 6, 8, -100, -100}}, torch::kLong);
  return batch;
}

}  // namespace ctrainer::testing
