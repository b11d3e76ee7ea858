#include <ctrainer/trainer/evaluation/eval_gather.h>

#include <stdexcept>
#include <string>

#include <ctrainer/trainer/evaluation/tensor_concat.h>

namespace ctrainer {

at::Tensor gather_in_dataset_order(Strategy& strategy, const at::Tensor& local,
                                   int64_t dataset_size, double padding_index) {
  if (strategy.world_size() == 1) return local;
  std::vector<at::Tensor> parts = strategy.all_gather(local);
  const int64_t world = static_cast<int64_t>(parts.size());
  const at::Tensor* first_defined = nullptr;
  for (const auto& p : parts)
    if (p.defined() && first_defined == nullptr) first_defined = &p;
  if (first_defined == nullptr) return {};
  if (first_defined->dim() == 0)
    throw std::runtime_error("evaluation: cannot gather a scalar output in dataset order");
  // A rank without rows (a dataset smaller than the world) produced nothing: zero rows.
  std::vector<int64_t> no_rows = first_defined->sizes().vec();
  no_rows[0] = 0;
  for (auto& p : parts)
    if (!p.defined()) p = at::empty(no_rows, first_defined->options());
  // Shares of rows r, r + W, ...: the first ranks may hold one row more than the last ones.
  const int64_t rows = parts.front().size(0);
  for (int64_t r = 1; r < world; ++r) {
    const int64_t mine = parts[static_cast<size_t>(r)].size(0);
    const int64_t before = parts[static_cast<size_t>(r - 1)].size(0);
    if (mine > before || mine < rows - 1)
      throw std::runtime_error(
          "evaluation: rank " + std::to_string(r) + " produced " + std::to_string(mine) +
          " rows after rank " + std::to_string(r - 1) + "'s " + std::to_string(before) +
          "; each rank must evaluate rows rank, rank + world size, ... of the dataset (the "
          "default evaluation sampler does)");
  }
  // Equal shares first: a missing last row is padded (it lies past the dataset's end below).
  std::vector<at::Tensor> equal;
  for (auto& p : parts) {
    if (p.size(0) == rows) {
      equal.push_back(p);
      continue;
    }
    std::vector<int64_t> shape = p.sizes().vec();
    shape[0] = rows - p.size(0);
    equal.push_back(at::cat({p, at::full(shape, padding_index, p.options())}, 0));
  }
  // Rank-major [world * rows, ...] -> row k of rank r is dataset row k * world + r.
  at::Tensor rank_major = concat_padded(equal, padding_index);
  std::vector<int64_t> shape = rank_major.sizes().vec();
  shape[0] = rows;
  shape.insert(shape.begin(), world);
  at::Tensor dataset_order = rank_major.reshape(shape).transpose(0, 1).reshape(rank_major.sizes());
  // Past the dataset's end lie only the filler rows of the shorter shares.
  return dataset_order.narrow(0, 0, std::min(dataset_size, world * rows)).contiguous();
}

}  // namespace ctrainer
