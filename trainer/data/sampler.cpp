#include <ctrainer/trainer/data/sampler.h>

#include <numeric>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace ctrainer {

std::vector<int64_t> SequentialSampler::indices(int64_t /*epoch*/) const {
  std::vector<int64_t> out(static_cast<size_t>(n_));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  // A private generator: shuffling never consumes the global RNG that seeds init and dropout.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed_ + epoch));
  at::Tensor perm = at::randperm(n_, gen, at::TensorOptions().dtype(at::kLong));
  const int64_t* p = perm.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + n_);
}

}  // namespace ctrainer
