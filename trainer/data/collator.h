#pragma once
/// \file Collators turn a list of examples into one batch.
#include <cstdint>
#include <string>
#include <vector>

#include <ctrainer/core/batch.h>

namespace ctrainer {

/// Where a batch comes from: the loader's epoch and the dataset indices of its examples.
/// Collators that draw random numbers (MLM masking) seed them from it, so that a batch gets the
/// same draws whichever loader thread builds it and whether or not the run was resumed.
struct BatchOrigin {
  int64_t epoch = 0;
  std::vector<int64_t> dataset_indices;
};

/// Builds a batch from examples (HF's data_collator).
class DataCollator {
 public:
  virtual ~DataCollator() = default;
  virtual Batch operator()(const std::vector<Example>& examples) const = 0;
  /// What the DataLoader calls: operator() unless the collator draws random numbers, in which
  /// case it draws them from a generator seeded by `origin`.
  virtual Batch collate(const std::vector<Example>& examples, const BatchOrigin& origin) const {
    (void)origin;
    return (*this)(examples);
  }
};

/// The value a collator pads `key` with: the tokenizer's pad id for input_ids, 1 for
/// special_tokens_mask (padding is special, as HF's tokenizer.pad marks it), 0 for the rest.
int64_t padding_value_for(const std::string& key, int64_t pad_token_id);

/// `rows` (each [n_i, ...], equal in the other dimensions) in one [rows, length, ...] tensor
/// filled with `value`, each row's n_i entries at the start, or with `left` at the end.
at::Tensor pad_sequences(const std::vector<at::Tensor>& rows, int64_t length, int64_t value,
                         bool left);

/// Stacks every key along a new first dimension (HF's DefaultDataCollator). All examples must
/// carry the same keys with equal shapes; otherwise it throws naming the key.
class DefaultDataCollator : public DataCollator {
 public:
  Batch operator()(const std::vector<Example>& examples) const override;
};

}  // namespace ctrainer
