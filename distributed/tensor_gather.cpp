#include <ctrainer/distributed/tensor_gather.h>

#include <string>

namespace ctrainer {
namespace {

/// Enough for every output the trainer gathers (logits are at most [batch, seq, vocab]).
constexpr int64_t kMaxDims = 8;
/// Header layout: defined flag, dtype, number of dimensions, then the sizes.
constexpr int64_t kHeaderSize = 3 + kMaxDims;

at::Tensor describe_shape(const at::Tensor& tensor) {
  at::Tensor header = at::zeros({kHeaderSize}, at::kLong);
  auto h = header.accessor<int64_t, 1>();
  if (!tensor.defined()) return header;
  if (tensor.dim() > kMaxDims)
    throw DistributedError("cannot gather a tensor with " + std::to_string(tensor.dim()) +
                           " dimensions across ranks (at most " + std::to_string(kMaxDims) + ")");
  h[0] = 1;
  h[1] = static_cast<int64_t>(tensor.scalar_type());
  h[2] = tensor.dim();
  for (int64_t d = 0; d < tensor.dim(); ++d) h[3 + d] = tensor.size(d);
  return header;
}

}  // namespace

std::vector<at::Tensor> all_gather_variable(ProcessGroup& group, const at::Tensor& tensor) {
  const std::vector<at::Tensor> headers = group.all_gather(describe_shape(tensor));
  // The common dtype and rank of the defined tensors, and the largest size in each dimension.
  int64_t first_defined = -1;
  std::vector<int64_t> max_sizes;
  for (int64_t r = 0; r < static_cast<int64_t>(headers.size()); ++r) {
    auto h = headers[static_cast<size_t>(r)].accessor<int64_t, 1>();
    if (h[0] == 0) continue;
    if (first_defined < 0) {
      first_defined = r;
      max_sizes.assign(static_cast<size_t>(h[2]), 0);
    }
    auto f = headers[static_cast<size_t>(first_defined)].accessor<int64_t, 1>();
    if (h[1] != f[1] || h[2] != f[2])
      throw DistributedError(
          "ranks " + std::to_string(first_defined) + " and " + std::to_string(r) +
          " produced outputs of different dtype or number of dimensions (" +
          std::string(c10::toString(static_cast<at::ScalarType>(f[1]))) + " with " +
          std::to_string(f[2]) + " dims vs " + c10::toString(static_cast<at::ScalarType>(h[1])) +
          " with " + std::to_string(h[2]) +
          "); every rank must return the same kind of predictions");
    for (int64_t d = 0; d < h[2]; ++d)
      max_sizes[static_cast<size_t>(d)] = std::max(max_sizes[static_cast<size_t>(d)], h[3 + d]);
  }
  std::vector<at::Tensor> out(headers.size());
  if (first_defined < 0) return out;  // nobody had anything

  const auto dtype = static_cast<at::ScalarType>(
      headers[static_cast<size_t>(first_defined)].accessor<int64_t, 1>()[1]);
  const at::Device device = tensor.defined() ? tensor.device() : at::Device(at::kCPU);
  // Pad this rank's tensor to the largest shape (zeros; cut off again below).
  at::Tensor padded = at::zeros(max_sizes, at::TensorOptions().dtype(dtype).device(device));
  if (tensor.defined() && tensor.numel() > 0) {
    at::Tensor region = padded;
    for (int64_t d = 0; d < tensor.dim(); ++d) region = region.narrow(d, 0, tensor.size(d));
    region.copy_(tensor);
  }
  std::vector<at::Tensor> gathered = group.all_gather(padded);
  for (size_t r = 0; r < headers.size(); ++r) {
    auto h = headers[r].accessor<int64_t, 1>();
    if (h[0] == 0) continue;
    at::Tensor part = gathered[r];
    for (int64_t d = 0; d < h[2]; ++d) part = part.narrow(d, 0, h[3 + d]);
    out[r] = part.contiguous();
  }
  return out;
}

}  // namespace ctrainer
