#pragma once
/// \file Batch / Example: named tensors flowing from datasets through collators to the model.
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace ctrainer {

/// Named tensors (e.g. "input_ids", "attention_mask", "labels"). Used for single examples
/// (no batch dimension) and for batches (leading batch dimension).
class TensorMap {
 public:
  TensorMap() = default;
  TensorMap(std::initializer_list<std::pair<const std::string, at::Tensor>> items)
      : items_(items) {}

  bool contains(const std::string& key) const { return items_.count(key) != 0; }
  /// The tensor under `key`; throws std::out_of_range naming the key and the keys present.
  const at::Tensor& at(const std::string& key) const;
  /// The tensor under `key`, or an undefined tensor when absent (a model's optional inputs).
  at::Tensor get_or_undefined(const std::string& key) const {
    const auto found = items_.find(key);
    return found == items_.end() ? at::Tensor() : found->second;
  }
  at::Tensor& operator[](const std::string& key) { return items_[key]; }
  void set(const std::string& key, at::Tensor value) { items_[key] = std::move(value); }
  void erase(const std::string& key) { items_.erase(key); }
  std::vector<std::string> keys() const;
  bool empty() const { return items_.empty(); }

  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

 protected:
  std::map<std::string, at::Tensor> items_;
};

/// One dataset example.
using Example = TensorMap;

/// A collated batch. The host-to-device move happens in one place: Batch::to.
class Batch : public TensorMap {
 public:
  using TensorMap::TensorMap;
  Batch() = default;
  explicit Batch(TensorMap map) : TensorMap(std::move(map)) {}

  /// Number of examples (size of dim 0 of the first tensor; 0 when empty).
  int64_t size() const;
  /// Copy of this batch on `device`. Pinned host tensors are copied with non_blocking=true.
  Batch to(const at::Device& device) const;
  /// Copy of this batch with every tensor in page-locked host memory (CUDA builds only).
  Batch pinned() const;
};

}  // namespace ctrainer
