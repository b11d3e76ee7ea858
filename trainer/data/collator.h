#pragma once
/// \file Collators turn a list of examples into one batch.
#include <vector>

#include <ctrainer/core/batch.h>

namespace ctrainer {

/// Builds a batch from examples (HF's data_collator).
class DataCollator {
 public:
  virtual ~DataCollator() = default;
  virtual Batch operator()(const std::vector<Example>& examples) const = 0;
};

/// Stacks every key along a new first dimension (HF's DefaultDataCollator). All examples must
/// carry the same keys with equal shapes; otherwise it throws naming the key.
class DefaultDataCollator : public DataCollator {
 public:
  Batch operator()(const std::vector<Example>& examples) const override;
};

}  // namespace ctrainer
