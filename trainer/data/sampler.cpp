#include <ctrainer/trainer/data/sampler.h>

#include <numeric>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <ctrainer/core/errors.h>

namespace ctrainer {

nlohmann::json SamplerState::to_json() const {
  return {{"sampler", sampler},
          {"seed", seed ? nlohmann::json(*seed) : nlohmann::json(nullptr)},
          {"epoch", epoch},
          {"position", position},
          {"details", details}};
}

SamplerState SamplerState::from_json(const nlohmann::json& j) {
  auto bad = [&](const std::string& what) {
    return ArgumentError("sampler state " + j.dump() + ": " + what);
  };
  if (!j.is_object()) throw bad("expected a JSON object");
  SamplerState s;
  try {
    s.sampler = j.value("sampler", std::string("custom"));
    if (j.contains("seed") && !j.at("seed").is_null()) s.seed = j.at("seed").get<int64_t>();
    s.epoch = j.at("epoch").get<int64_t>();
    s.position = j.at("position").get<int64_t>();
    if (j.contains("details")) s.details = j.at("details");
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("needs integer epoch and position (") + e.what() + ")");
  }
  if (s.epoch < 0 || s.position < 0) throw bad("epoch and position must be >= 0");
  return s;
}

std::vector<int64_t> SequentialSampler::indices(int64_t /*epoch*/) const {
  std::vector<int64_t> out(static_cast<size_t>(n_));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

std::vector<int64_t> seeded_permutation(int64_t n, int64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  at::Tensor perm = at::randperm(n, gen, at::TensorOptions().dtype(at::kLong));
  const int64_t* p = perm.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + n);
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  return seeded_permutation(n_, seed_ + epoch);
}

}  // namespace ctrainer
