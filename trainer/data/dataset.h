#pragma once
/// \file Map-style datasets: a size and random access to examples.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/core/batch.h>

namespace ctrainer {

/// A map-style dataset. `get` may be called from several threads at once, so it must be
/// thread-safe (read-only access is).
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Example get(int64_t index) const = 0;
  /// Optional fast path (PyTorch's `__getitems__`): the stacked batch of `indices`, equal to
  /// stacking get(i) for each index. Datasets that hold whole tensors override it to gather in one
  /// index_select per key; the default returns nothing and the loader stacks examples.
  virtual std::optional<Batch> get_stacked(const std::vector<int64_t>& indices) const {
    (void)indices;
    return std::nullopt;
  }
  /// Optional: the length (token count) of every example, which --group_by_length needs
  /// (HF reads it from the dataset's length column or its input_ids). Default: none.
  virtual std::optional<std::vector<int64_t>> lengths() const { return std::nullopt; }
};

/// A dataset over named tensors sharing their first dimension (example i = row i of each).
class TensorDataset : public Dataset {
 public:
  /// Throws ArgumentError if the tensors are empty or their first dimensions differ.
  explicit TensorDataset(std::map<std::string, at::Tensor> tensors);
  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;
  std::optional<Batch> get_stacked(const std::vector<int64_t>& indices) const override;

 private:
  std::map<std::string, at::Tensor> tensors_;
  int64_t size_ = 0;
};

}  // namespace ctrainer
