#include <ctrainer/trainer/data/dataset.h>

#include <stdexcept>

#include <ctrainer/core/errors.h>

namespace ctrainer {

TensorDataset::TensorDataset(std::map<std::string, at::Tensor> tensors)
    : tensors_(std::move(tensors)) {
  if (tensors_.empty()) throw ArgumentError("TensorDataset needs at least one named tensor");
  bool first = true;
  for (const auto& [name, t] : tensors_) {
    if (!t.defined() || t.dim() == 0)
      throw ArgumentError("TensorDataset: tensor '" + name + "' needs a first (example) dimension");
    if (first) {
      size_ = t.size(0);
      first = false;
    } else if (t.size(0) != size_) {
      throw ArgumentError("TensorDataset: tensor '" + name + "' has " + std::to_string(t.size(0)) +
                          " rows but the others have " + std::to_string(size_));
    }
  }
}

Example TensorDataset::get(int64_t index) const {
  if (index < 0 || index >= size_)
    throw std::out_of_range("TensorDataset index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(size_) + ")");
  Example ex;
  for (const auto& [name, t] : tensors_) ex.set(name, t[index]);
  return ex;
}

std::optional<Batch> TensorDataset::get_stacked(const std::vector<int64_t>& indices) const {
  auto idx = at::tensor(indices, at::TensorOptions().dtype(at::kLong));
  Batch batch;
  for (const auto& [name, t] : tensors_) batch.set(name, t.index_select(0, idx));
  return batch;
}

}  // namespace ctrainer
