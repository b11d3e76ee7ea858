// RNG state capture/restore: draws after a restore repeat bit for bit (CPU; CUDA when present),
// the JSON form round-trips, base64 handles every length and byte value, and corrupt JSON is
// rejected with messages naming the key.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/nn/functional/dropout.h>
#include <nlohmann/json.hpp>
#include "support/expect_error.h"

#include <ctrainer/core/base64.h>
#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/checkpoint/rng_state.h>

namespace ctrainer {
namespace rng_state_test {

using nlohmann::json;

std::vector<uint8_t> bytes_of(const std::string& s) {
  return {s.begin(), s.end()};
}

using testing::expect_error;

// ---- base64 -----------------------------------------------------------------------------------

TEST(Base64, Rfc4648Vectors) {
  // Lengths 0..6 cover every remainder (no padding, "==", "=").
  const std::vector<std::pair<std::string, std::string>> vectors = {{"", ""},
                                                                    {"f", "Zg=="},
                                                                    {"fo", "Zm8="},
                                                                    {"foo", "Zm9v"},
                                                                    {"foob", "Zm9vYg=="},
                                                                    {"fooba", "Zm9vYmE="},
                                                                    {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(bytes_of(plain)), encoded) << plain;
    EXPECT_EQ(base64_decode(encoded), bytes_of(plain)) << encoded;
  }
}

TEST(Base64, AllByteValuesAndLengths) {
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<uint8_t>(i);
  const std::string encoded = base64_encode(all);
  EXPECT_EQ(encoded.size(), 344u);
  EXPECT_EQ(base64_decode(encoded), all);
  // Every prefix length, and every byte value at the end of a partial quad.
  for (size_t n = 0; n <= 10; ++n) {
    std::vector<uint8_t> prefix(all.end() - static_cast<long>(n), all.end());
    EXPECT_EQ(base64_decode(base64_encode(prefix)), prefix) << n;
  }
  for (int b = 0; b < 256; ++b) {
    for (size_t n = 1; n <= 5; ++n) {
      const std::vector<uint8_t> bytes(n, static_cast<uint8_t>(b));
      EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes) << b << " x" << n;
    }
  }
  EXPECT_EQ(base64_encode({0xfb, 0xff}), "+/8=");  // the two non-alphanumeric characters
}

TEST(Base64, RejectsInvalidInput) {
  expect_error([] { base64_decode("Zm9"); }, {"length 3", "multiple of 4"});
  expect_error([] { base64_decode("Zm9vY"); }, {"length 5"});
  expect_error([] { base64_decode("Zm!v"); }, {"'!'", "position 2"});
  expect_error([] { base64_decode("Zm9v\nZm8="); }, {"length 9"});
  expect_error([] { base64_decode(std::string("Zm9\x01", 4)); }, {"0x01", "position 3"});
  expect_error([] { base64_decode("Z=9v"); }, {"'='", "position 1"});      // padding inside
  expect_error([] { base64_decode("Zg==Zg=="); }, {"'='", "position 2"});  // padding mid-text
  expect_error([] { base64_decode("===="); }, {"'='", "position 0"});
  expect_error([] { base64_decode("Z==="); }, {"'='", "position 1"});
  expect_error([] { base64_decode("Zh=="); }, {"non-zero padding bits"});  // canonical: Zg==
  expect_error([] { base64_decode("Zm9="); }, {"non-zero padding bits"});  // canonical: Zm8=
}

// ---- capture / restore --------------------------------------------------------------------------

// A mix of what training draws: normal noise (odd sizes use the generator's cached normal
// sample), uniform, dropout masks and Bernoulli samples.
std::vector<at::Tensor> draw(const c10::Device& device) {
  const auto opts = torch::TensorOptions().device(device);
  namespace F = torch::nn::functional;
  return {torch::randn({7}, opts),
          torch::randn({33, 5}, opts),
          torch::rand({19}, opts),
          F::dropout(torch::ones({257}, opts), F::DropoutFuncOptions().p(0.3).training(true)),
          torch::bernoulli(torch::full({64}, 0.5, opts)),
          torch::randint(0, 1000, {11}, opts),
          torch::randperm(50, opts.dtype(torch::kLong))};
}

void expect_equal_draws(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "draw " << i;
}

TEST(RngState, CpuRestoreRepeatsDraws) {
  torch::manual_seed(123);
  torch::randn({3});  // leave the generator mid-stream, with a cached normal sample
  const RngState state = capture_rng_state();
  EXPECT_FALSE(state.cpu.empty());
  EXPECT_TRUE(state.sampler.is_object() && state.sampler.empty());
  const auto first = draw(torch::kCPU);
  const auto other = draw(torch::kCPU);
  EXPECT_FALSE(torch::equal(first[0], other[0]));  // the generator did advance
  restore_rng_state(state);
  expect_equal_draws(first, draw(torch::kCPU));
  // Restoring does not depend on what happened in between, and can be repeated.
  torch::manual_seed(999);
  restore_rng_state(state);
  expect_equal_draws(first, draw(torch::kCPU));
}

TEST(RngState, GeneratorStateLayoutsAreTorchs) {
  // What checkpoints store: the CPU generator's 5056-byte CPUGeneratorImplState (the same in
  // torch 1.13 and 2.x, so rng_state.json files load across versions) and, per GPU, Philox's
  // seed + offset (16 bytes).
  EXPECT_EQ(capture_rng_state().cpu.size(), 5056u);
#ifdef CTRAINER_WITH_CUDA
  if (torch::cuda::is_available())
    for (const auto& s : capture_rng_state().cuda) EXPECT_EQ(s.size(), 16u);
#endif
}

TEST(RngState, JsonRoundTripThroughText) {
  torch::manual_seed(5);
  torch::rand({10});
  RngState state = capture_rng_state();
  state.sampler = {{"seed", 42}, {"epoch", 3}, {"position", 17}};
  const auto first = draw(torch::kCPU);

  const json j = rng_state_to_json(state);
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["cuda_device_count"], state.cuda.size());
  const RngState back = rng_state_from_json(json::parse(j.dump()));
  EXPECT_EQ(back.cpu, state.cpu);
  EXPECT_EQ(back.cuda, state.cuda);
  EXPECT_EQ(back.sampler, state.sampler);
  restore_rng_state(back);
  expect_equal_draws(first, draw(torch::kCPU));
}

TEST(RngState, RestoreValidatesBeforeChangingAnything) {
  torch::manual_seed(8);
  const RngState good = capture_rng_state();
  const auto first = draw(torch::kCPU);
  restore_rng_state(good);

  RngState empty = good;
  empty.cpu.clear();
  expect_error([&] { restore_rng_state(empty); }, {"CPU generator state has 0 bytes"});
  RngState short_state = good;
  short_state.cpu.resize(100);
  expect_error([&] { restore_rng_state(short_state); },
               {"has 100 bytes", std::to_string(good.cpu.size())});
  // The right size with an mt19937 position past its 624 words (fuzz/corpus/rng_state/
  // cpu_next_out_of_range.json): libtorch refuses it, and that is an ArgumentError too.
  RngState bad_position = good;
  bad_position.cpu[16] = 0xA0;  // legacy_pod.next, a uint64 at byte 16: 0x86A0 = 34464
  bad_position.cpu[17] = 0x86;
  expect_error([&] { restore_rng_state(bad_position); },
               {"CPU generator state is invalid", "mt19937"});
  // None of the rejected restores touched the generator.
  expect_equal_draws(first, draw(torch::kCPU));
}

TEST(RngState, GpuStateResumesOnFewerGpusWithTheCpuGeneratorRestored) {
  // A checkpoint from a machine with one GPU more than visible now (0 on a CPU-only machine):
  // the CPU generator is restored, the CUDA states are skipped (with a warning), no error.
  torch::manual_seed(21);
  RngState from_gpu_machine = capture_rng_state();
  from_gpu_machine.cuda.resize(from_gpu_machine.cuda.size() + 1, std::vector<uint8_t>(16, 0));
  const auto expected = draw(torch::kCPU);
  torch::manual_seed(99);
  EXPECT_NO_THROW(restore_rng_state(from_gpu_machine));
  expect_equal_draws(expected, draw(torch::kCPU));
}

TEST(RngState, CorruptJsonIsRejected) {
  const json good = rng_state_to_json(capture_rng_state());
  auto without = [&](const char* key) {
    json j = good;
    j.erase(key);
    return j;
  };
  auto with = [&](const char* key, json value) {
    json j = good;
    j[key] = std::move(value);
    return j;
  };
  for (const char* key : {"format_version", "cpu", "cuda", "cuda_device_count", "sampler"}) {
    expect_error([&] { rng_state_from_json(without(key)); },
                 {std::string("missing key \"") + key + "\""});
  }
  expect_error([&] { rng_state_from_json(json::array()); }, {"JSON object"});
  expect_error([&] { rng_state_from_json(with("format_version", 2)); }, {"format_version 2"});
  expect_error([&] { rng_state_from_json(with("format_version", "1")); }, {"an integer"});
  expect_error([&] { rng_state_from_json(with("cpu", 5)); }, {"\"cpu\"", "base64 string"});
  expect_error([&] { rng_state_from_json(with("cpu", "not*base64")); },
               {"\"cpu\"", "invalid base64"});
  std::string truncated = good["cpu"].get<std::string>();
  truncated.pop_back();
  expect_error([&] { rng_state_from_json(with("cpu", truncated)); }, {"\"cpu\"", "multiple of 4"});
  expect_error([&] { rng_state_from_json(with("cpu", base64_encode(std::vector<uint8_t>(10)))); },
               {"has 10 bytes"});
  expect_error([&] { rng_state_from_json(with("cuda", "AAAA")); }, {"\"cuda\"", "array"});
  json bad_cuda = with("cuda", json::array({"A"}));
  bad_cuda["cuda_device_count"] = 1;
  expect_error([&] { rng_state_from_json(bad_cuda); }, {"\"cuda[0]\"", "invalid base64"});
  expect_error([&] { rng_state_from_json(with("cuda_device_count", 7)); },
               {"\"cuda_device_count\"", "length of \"cuda\""});
  expect_error([&] { rng_state_from_json(with("sampler", json::array())); },
               {"\"sampler\"", "JSON object"});
}

TEST(RngState, CudaRestoreRepeatsDraws) {
#ifndef CTRAINER_WITH_CUDA
  GTEST_SKIP() << "built without CTRAINER_WITH_CUDA";
#else
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA is not available";
  torch::cuda::manual_seed_all(77);
  torch::randn({3}, torch::kCUDA);
  const RngState state = capture_rng_state();
  ASSERT_EQ(state.cuda.size(), torch::cuda::device_count());
  for (const auto& s : state.cuda) EXPECT_FALSE(s.empty());
  const auto first = draw(torch::kCUDA);
  draw(torch::kCUDA);
  const RngState back = rng_state_from_json(json::parse(rng_state_to_json(state).dump()));
  restore_rng_state(back);
  expect_equal_draws(first, draw(torch::kCUDA));
#endif
}

}  // namespace rng_state_test
}  // namespace ctrainer
