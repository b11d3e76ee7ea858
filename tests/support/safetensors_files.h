#pragma once
// Shared by the safetensors unit tests (tests/unit/safetensors_*_test.cpp): a per-test scratch
// directory, raw file bytes, hand-built files, bitwise tensor comparison and one tensor of every
// dtype the format stores.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace ctrainer::testing {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("ctrainer_safetensors_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string u64_le(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file from a header text (length prefix computed, no padding added) and a data section.
inline std::string make_file(const std::string& header, const std::string& data) {
  return u64_le(header.size()) + header + data;
}

// Tensors are equal when dtype, shape and every byte match (NaN payloads included).
inline void expect_bitwise_equal(const at::Tensor& expected, const at::Tensor& actual,
                                 const std::string& name) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(actual.defined());
  EXPECT_EQ(actual.scalar_type(), expected.scalar_type());
  ASSERT_EQ(actual.sizes(), expected.sizes());
  EXPECT_TRUE(actual.device().is_cpu());
  const at::Tensor e = expected.contiguous();
  const at::Tensor a = actual.contiguous();
  ASSERT_EQ(a.nbytes(), e.nbytes());
  if (e.nbytes() > 0) EXPECT_EQ(std::memcmp(a.data_ptr(), e.data_ptr(), e.nbytes()), 0);
}

inline void expect_same_tensors(const std::map<std::string, at::Tensor>& expected,
                                const std::map<std::string, at::Tensor>& actual) {
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, t] : expected) {
    auto it = actual.find(name);
    ASSERT_NE(it, actual.end()) << "missing tensor " << name;
    expect_bitwise_equal(t, it->second, name);
  }
}

inline std::map<std::string, at::Tensor> every_dtype() {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::map<std::string, at::Tensor> t;
  t["f64"] =
      at::tensor({1.5, -2.25, nan, inf, -inf, 1e300, 4.9e-324, -0.0}, at::kDouble).reshape({2, 4});
  t["f32"] = at::tensor({1.5, -2.25, nan, inf, -inf, 3.0e38, 1.0e-45, -0.0}, at::kFloat);
  // Values exact in half / bfloat16, plus their extremes.
  t["f16"] = at::tensor({0.5, -65504.0, 65504.0, 6.0e-8, inf, -inf, nan}, at::kFloat).to(at::kHalf);
  t["bf16"] =
      at::tensor({1.0, -3.0e38, 0.0078125, 1.0e-38, inf, nan, -0.0}, at::kFloat).to(at::kBFloat16);
  t["i64"] = at::tensor({std::numeric_limits<std::int64_t>::min(), std::int64_t{-1},
                         std::int64_t{0}, std::numeric_limits<std::int64_t>::max()},
                        at::kLong);
  t["i32"] = at::tensor({std::numeric_limits<std::int32_t>::min(), -7, 0,
                         std::numeric_limits<std::int32_t>::max()},
                        at::kInt)
                 .reshape({2, 2});
  t["i16"] = at::tensor({-32768, -1, 0, 32767}, at::kShort);
  t["i8"] = at::tensor({-128, -1, 0, 127}, at::kChar);
  t["u8"] = at::tensor({0, 1, 128, 255}, at::kByte);
  t["bool"] = at::tensor({1, 0, 0, 1, 1}, at::kInt).to(at::kBool);
  // torch 2.x's unsigned, float8 and complex types, from chosen bit patterns.
  t["u16"] = at::tensor({0, 1, 32768, 65535}, at::kInt).to(at::kUInt16);
  t["u32"] = at::tensor({std::int64_t{0}, std::int64_t{4294967295}}, at::kLong).to(at::kUInt32);
  t["u64"] = at::tensor({std::int64_t{0}, std::numeric_limits<std::int64_t>::max()}, at::kLong)
                 .to(at::kUInt64);
  const at::Tensor f8_bits = at::tensor({0x00, 0x38, 0x7e, 0x80, 0xff}, at::kInt).to(at::kByte);
  for (const auto& [key, type] : {std::pair{"f8_e4m3", at::kFloat8_e4m3fn},
                                  std::pair{"f8_e5m2", at::kFloat8_e5m2},
                                  std::pair{"f8_e4m3fnuz", at::kFloat8_e4m3fnuz},
                                  std::pair{"f8_e5m2fnuz", at::kFloat8_e5m2fnuz}})
    t[key] = f8_bits.view(type).clone();
  t["c64"] = at::tensor({1.5, -2.0, 0.0, 3.25}, at::kFloat).view(at::kComplexFloat);
  return t;
}

}  // namespace ctrainer::testing
