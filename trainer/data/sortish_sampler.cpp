#include <ctrainer/trainer/data/sortish_sampler.h>

#include <algorithm>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randperm.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/data/distributed_sampler.h>

namespace ctrainer {
namespace {

std::vector<int64_t> draw_permutation(int64_t n, at::Generator& generator) {
  const at::Tensor perm = at::randperm(n, generator, at::TensorOptions().dtype(at::kLong));
  const int64_t* p = perm.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + n);
}

int64_t batch_count(int64_t n, int64_t batch_size) {
  return (n + batch_size - 1) / batch_size;
}

}  // namespace

std::vector<int64_t> sortish_indices(const std::vector<int64_t>& lengths, int64_t batch_size,
                                     const std::vector<int64_t>& order,
                                     const std::vector<int64_t>& batch_order) {
  const int64_t n = static_cast<int64_t>(order.size());
  if (n == 0) return {};
  auto length_of = [&](int64_t i) { return lengths[static_cast<size_t>(i)]; };
  std::vector<int64_t> sorted(order);
  const int64_t chunk = 50 * batch_size;
  for (int64_t start = 0; start < n; start += chunk)
    std::stable_sort(sorted.begin() + start, sorted.begin() + std::min(n, start + chunk),
                     [&](int64_t a, int64_t b) { return length_of(a) > length_of(b); });
  const int64_t batches = batch_count(n, batch_size);
  std::vector<int64_t> batch_starts(static_cast<size_t>(batches));
  for (int64_t b = 0; b < batches; ++b) batch_starts[static_cast<size_t>(b)] = b * batch_size;
  int64_t longest = 0;  // np.argmax: the first batch whose first example is the longest
  for (int64_t b = 1; b < batches; ++b)
    if (length_of(sorted[static_cast<size_t>(b * batch_size)]) >
        length_of(sorted[static_cast<size_t>(longest * batch_size)]))
      longest = b;
  std::swap(batch_starts[0], batch_starts[static_cast<size_t>(longest)]);
  std::vector<int64_t> out;
  out.reserve(order.size());
  auto append_batch = [&](int64_t start) {
    out.insert(out.end(), sorted.begin() + start, sorted.begin() + std::min(n, start + batch_size));
  };
  append_batch(batch_starts[0]);
  for (int64_t k : batch_order) append_batch(batch_starts[static_cast<size_t>(k + 1)]);
  return out;
}

SortishSampler::SortishSampler(std::vector<int64_t> lengths, int64_t batch_size, int64_t seed,
                               int64_t num_replicas, int64_t rank, bool drop_last)
    : lengths_(std::move(lengths)),
      batch_size_(batch_size),
      seed_(seed),
      num_replicas_(num_replicas),
      rank_(rank),
      drop_last_(drop_last) {
  if (batch_size_ < 1)
    throw ArgumentError("SortishSampler: batch_size must be >= 1, got " +
                        std::to_string(batch_size_));
  for (int64_t length : lengths_)
    if (length < 0) throw ArgumentError("SortishSampler: lengths must be >= 0");
  if (num_replicas < 1 || rank < 0 || rank >= num_replicas)
    throw ArgumentError("SortishSampler: rank " + std::to_string(rank) + " of " +
                        std::to_string(num_replicas) + " replicas is invalid");
}

int64_t SortishSampler::size() const {
  const auto n = static_cast<int64_t>(lengths_.size());
  return num_replicas_ == 1 ? n : distributed_num_samples(n, num_replicas_, drop_last_);
}

std::vector<int64_t> SortishSampler::indices(int64_t epoch) const {
  const auto n = static_cast<int64_t>(lengths_.size());
  if (n == 0) return {};
  at::Generator generator =
      at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed_ + epoch));
  const std::vector<int64_t> order = draw_permutation(n, generator);
  const std::vector<int64_t> batch_order =
      draw_permutation(batch_count(n, batch_size_) - 1, generator);
  std::vector<int64_t> all = sortish_indices(lengths_, batch_size_, order, batch_order);
  if (num_replicas_ == 1) return all;
  return shard_for_replica(std::move(all), num_replicas_, rank_, drop_last_);
}

nlohmann::json SortishSampler::details() const {
  if (num_replicas_ == 1) return nlohmann::json::object();
  return {{"num_replicas", num_replicas_}, {"rank", rank_}, {"drop_last", drop_last_}};
}

}  // namespace ctrainer
