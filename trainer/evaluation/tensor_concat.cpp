#include <ctrainer/trainer/evaluation/tensor_concat.h>

#include <stdexcept>

namespace ctrainer {

at::Tensor concat_padded(const std::vector<at::Tensor>& parts, double padding_index) {
  if (parts.empty()) return {};
  const int64_t dims = parts.front().dim();
  std::vector<int64_t> max_sizes(parts.front().sizes().begin(), parts.front().sizes().end());
  bool ragged = false;
  for (const auto& p : parts) {
    if (p.dim() != dims)
      throw std::invalid_argument("cannot concatenate evaluation outputs of different ranks (" +
                                  std::to_string(p.dim()) + " vs " + std::to_string(dims) + ")");
    for (int64_t d = 1; d < dims; ++d) {
      if (p.size(d) != max_sizes[d]) ragged = true;
      max_sizes[d] = std::max(max_sizes[d], p.size(d));
    }
  }
  if (dims == 0) return at::stack(parts);
  if (!ragged) return at::cat(parts, 0);
  std::vector<at::Tensor> padded;
  for (const auto& p : parts) {
    std::vector<int64_t> shape = max_sizes;
    shape[0] = p.size(0);
    at::Tensor out = at::full(shape, padding_index, p.options());
    at::Tensor view = out;
    for (int64_t d = 1; d < dims; ++d) view = view.narrow(d, 0, p.size(d));
    view.copy_(p);
    padded.push_back(out);
  }
  return at::cat(padded, 0);
}

}  // namespace ctrainer
