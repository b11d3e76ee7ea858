#include <ctrainer/trainer/checkpoint/rng_state.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/Exception.h>
#ifdef CTRAINER_WITH_CUDA
#include <ATen/Context.h>
#include <torch/cuda.h>
#endif

#include <ctrainer/core/base64.h>
#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer {
namespace {

using nlohmann::json;

std::vector<uint8_t> tensor_bytes(const at::Tensor& state) {
  const at::Tensor t = state.contiguous();
  std::vector<uint8_t> bytes(static_cast<size_t>(t.numel()));
  if (!bytes.empty()) std::memcpy(bytes.data(), t.data_ptr<uint8_t>(), bytes.size());
  return bytes;
}

at::Tensor bytes_tensor(const std::vector<uint8_t>& bytes) {
  at::Tensor t = at::empty({static_cast<int64_t>(bytes.size())}, at::TensorOptions(at::kByte));
  if (!bytes.empty()) std::memcpy(t.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return t;
}

std::vector<uint8_t> generator_state(at::Generator gen) {
  // Generators are shared by every thread; libtorch requires their mutex for state access.
  std::lock_guard<std::mutex> lock(gen.mutex());
  return tensor_bytes(gen.get_state());
}

at::Generator cpu_generator() {
  return at::detail::getDefaultCPUGenerator();
}

// The state size of this libtorch's CPU generator: 5056 bytes (CPUGeneratorImplState: mt19937
// state, seed, cached normal samples) in torch 2.11-2.15 as in 1.13, so the layout is stable.
size_t cpu_state_size() {
  return generator_state(cpu_generator()).size();
}

void check_cpu_size(size_t size, const char* caller) {
  const size_t expected = cpu_state_size();
  if (size != expected) {
    throw ArgumentError(std::string(caller) + "the CPU generator state has " +
                        std::to_string(size) + " bytes but this libtorch's has " +
                        std::to_string(expected) +
                        (size == 0 ? " (empty state)" : " (corrupt or from another RNG)"));
  }
}

#ifdef CTRAINER_WITH_CUDA
int64_t cuda_device_count() {
  return torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
}

at::Generator cuda_generator(int64_t device) {
  return at::globalContext().defaultGenerator(
      at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device)));
}
#else
int64_t cuda_device_count() {
  return 0;
}
#endif

const json& member(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) {
    throw ArgumentError(std::string("RNG state: missing key \"") + key + "\"");
  }
  return *it;
}

[[noreturn]] void ill_typed(const std::string& key, const char* expected, const json& value) {
  std::string shown = value.dump();
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  throw ArgumentError("RNG state: \"" + key + "\" must be " + expected + ", got " + shown);
}

std::vector<uint8_t> decode_field(const json& value, const std::string& key) {
  if (!value.is_string()) ill_typed(key, "a base64 string", value);
  try {
    return base64_decode(value.get_ref<const std::string&>());
  } catch (const ArgumentError& e) {
    throw ArgumentError("RNG state: \"" + key + "\": " + e.what());
  }
}

}  // namespace

RngState capture_rng_state() {
  RngState state;
  state.cpu = generator_state(cpu_generator());
#ifdef CTRAINER_WITH_CUDA
  const int64_t devices = cuda_device_count();
  for (int64_t i = 0; i < devices; ++i) state.cuda.push_back(generator_state(cuda_generator(i)));
#endif
  return state;
}

void restore_rng_state(const RngState& state) {
  const char* caller = "restore_rng_state: ";
  check_cpu_size(state.cpu.size(), caller);
  // A checkpoint written on a GPU machine must resume on a CPU-only one (and on a different
  // GPU count): the CPU generator is restored and the CUDA ones are skipped with a warning, as
  // HF's Trainer does. Only a matching device count restores them.
  bool restore_cuda = !state.cuda.empty();
  if (restore_cuda) {
    const int64_t devices = cuda_device_count();
    if (static_cast<int64_t>(state.cuda.size()) != devices) {
      logging::logger()->warn(
          "the checkpoint holds RNG states for {} CUDA device(s) but {} are available now: only "
          "the CPU generator is restored, so GPU random numbers (dropout on the GPU) will differ "
          "from an uninterrupted run",
          state.cuda.size(), devices);
      restore_cuda = false;
    }
#ifdef CTRAINER_WITH_CUDA
    for (int64_t i = 0; restore_cuda && i < devices; ++i) {
      const size_t expected = generator_state(cuda_generator(i)).size();
      if (state.cuda[i].size() != expected) {
        throw ArgumentError(std::string(caller) + "the RNG state of CUDA device " +
                            std::to_string(i) + " has " + std::to_string(state.cuda[i].size()) +
                            " bytes but this libtorch's has " + std::to_string(expected));
      }
    }
#endif
  }

  {
    at::Generator gen = cpu_generator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    // libtorch checks the mt19937 fields (position, seeded flag) and keeps the old state when
    // they are invalid; the bytes come from a file, so that is bad input, not a bug.
    try {
      gen.set_state(bytes_tensor(state.cpu));
    } catch (const c10::Error& e) {
      throw ArgumentError(std::string(caller) + "the CPU generator state is invalid (" +
                          e.what_without_backtrace() + ")");
    }
  }
#ifdef CTRAINER_WITH_CUDA
  for (size_t i = 0; restore_cuda && i < state.cuda.size(); ++i) {
    at::Generator gen = cuda_generator(static_cast<int64_t>(i));
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(bytes_tensor(state.cuda[i]));
  }
#endif
}

json rng_state_to_json(const RngState& state) {
  json cuda = json::array();
  for (const auto& bytes : state.cuda) cuda.push_back(base64_encode(bytes));
  return json{{"format_version", kRngStateFormatVersion},
              {"cpu", base64_encode(state.cpu)},
              {"cuda", std::move(cuda)},
              {"cuda_device_count", state.cuda.size()},
              {"sampler", state.sampler}};
}

RngState rng_state_from_json(const json& j) {
  if (!j.is_object()) ill_typed("<root>", "a JSON object", j);
  const json& version = member(j, "format_version");
  if (!version.is_number_integer()) ill_typed("format_version", "an integer", version);
  if (version.get<int64_t>() != kRngStateFormatVersion) {
    throw ArgumentError("RNG state: unsupported format_version " + version.dump() +
                        " (this build reads " + std::to_string(kRngStateFormatVersion) + ")");
  }
  RngState state;
  state.cpu = decode_field(member(j, "cpu"), "cpu");
  check_cpu_size(state.cpu.size(), "RNG state: ");

  const json& cuda = member(j, "cuda");
  if (!cuda.is_array()) ill_typed("cuda", "an array of base64 strings", cuda);
  for (size_t i = 0; i < cuda.size(); ++i) {
    state.cuda.push_back(decode_field(cuda[i], "cuda[" + std::to_string(i) + "]"));
  }
  const json& count = member(j, "cuda_device_count");
  if (!count.is_number_integer() || count.get<int64_t>() != static_cast<int64_t>(cuda.size())) {
    ill_typed("cuda_device_count",
              ("the length of \"cuda\" (" + std::to_string(cuda.size()) + ")").c_str(), count);
  }
  const json& sampler = member(j, "sampler");
  if (!sampler.is_object()) ill_typed("sampler", "a JSON object", sampler);
  state.sampler = sampler;
  return state;
}

}  // namespace ctrainer
