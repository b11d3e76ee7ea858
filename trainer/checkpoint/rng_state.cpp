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

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer {
namespace {

using nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The value of each base64 character, -1 for bytes outside the alphabet (padding included).
constexpr std::array<int8_t, 256> make_decode_table() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  return table;
}
constexpr auto kDecode = make_decode_table();

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

std::string base64_encode(const uint8_t* data, size_t size) {
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    const uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = size - i;
  if (rest == 1) {
    const uint32_t v = uint32_t{data[i]} << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    const uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::vector<uint8_t> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    throw ArgumentError("invalid base64: length " + std::to_string(text.size()) +
                        " is not a multiple of 4");
  }
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const size_t valid = last ? 4 - padding : 4;  // characters that carry bits in this quad
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const auto c = static_cast<uint8_t>(text[i + k]);
      int8_t d = 0;
      if (k < valid) {
        d = kDecode[c];
        if (d < 0) {
          char shown[8];
          std::snprintf(shown, sizeof shown, c >= 0x20 && c < 0x7f ? "'%c'" : "0x%02x", c);
          throw ArgumentError("invalid base64: character " + std::string(shown) + " at position " +
                              std::to_string(i + k));
        }
      }
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<uint8_t>(v >> 16));
    if (valid >= 3) out.push_back(static_cast<uint8_t>(v >> 8));
    if (valid == 4) out.push_back(static_cast<uint8_t>(v));
    // Bits that no output byte uses must be zero, so every byte string has one encoding.
    if ((valid == 2 && (v & 0xFFFF) != 0) || (valid == 3 && (v & 0xFF) != 0)) {
      throw ArgumentError("invalid base64: non-zero padding bits at position " +
                          std::to_string(i + valid - 1));
    }
  }
  return out;
}

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
