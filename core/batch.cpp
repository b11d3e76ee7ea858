#include <ctrainer/core/batch.h>

#include <stdexcept>

namespace ctrainer {

const at::Tensor& TensorMap::at(const std::string& key) const {
  auto it = items_.find(key);
  if (it == items_.end()) {
    std::string present;
    for (const auto& [k, v] : items_) present += (present.empty() ? "" : ", ") + k;
    throw std::out_of_range("batch has no tensor '" + key + "' (present: " + present + ")");
  }
  return it->second;
}

std::vector<std::string> TensorMap::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : items_) out.push_back(k);
  return out;
}

int64_t Batch::size() const {
  for (const auto& [k, v] : items_)
    if (v.defined() && v.dim() > 0) return v.size(0);
  return 0;
}

Batch Batch::to(const at::Device& device) const {
  Batch out;
  for (const auto& [k, v] : items_) {
    if (!v.defined() || v.device() == device) {
      out.set(k, v);
    } else {
      // Pinned memory makes the copy asynchronous with respect to the host.
      out.set(k, v.to(device, /*non_blocking=*/v.is_pinned()));
    }
  }
  return out;
}

Batch Batch::pinned() const {
  Batch out;
  for (const auto& [k, v] : items_) out.set(k, v.defined() && v.is_cpu() ? v.pin_memory() : v);
  return out;
}

}  // namespace ctrainer
