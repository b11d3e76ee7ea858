// Tests of the exact byte layout the safetensors writer produces: the reference writer's tensor
// order, a hand-written golden file, header padding and aligned, contiguous data offsets.
#include <ctrainer/integrations/safetensors.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/safetensors_files.h"

namespace ctrainer {
namespace safetensors_layout_test {

using testing::every_dtype;
using testing::expect_same_tensors;
using testing::read_bytes;
using testing::SafetensorsTest;
using testing::write_bytes;

TEST_F(SafetensorsTest, LaysOutEveryDtypeInTheReferenceWritersOrder) {
  // The order safetensors 0.8's save() gives one tensor of each dtype (by decreasing dtype in
  // its enum), recorded from the Python package.
  const std::vector<std::string> expected = {
      "u64", "i64", "f64", "c64", "f32", "u32", "i32", "bf16", "f16", "u16", "i16",
      "f8_e5m2fnuz", "f8_e4m3fnuz", "f8_e4m3", "f8_e5m2", "i8", "u8", "bool"};
  const std::string p = path("order.safetensors");
  save_safetensors(p, every_dtype());
  SafetensorsHeader header = read_safetensors_header(p);
  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const auto& a, const auto& b) { return a.data_begin < b.data_begin; });
  std::vector<std::string> names;
  for (const auto& t : header.tensors) names.push_back(t.name);
  EXPECT_EQ(names, expected);
}

// The exact bytes of a file with two tensors, written out by hand: the format's definition.
TEST_F(SafetensorsTest, MatchesAHandWrittenGoldenFile) {
  // The 4-byte tensor goes first although its name sorts last (largest elements first), the
  // metadata leads the header, and the header is padded with 5 spaces to 144 = 18 * 8 bytes.
  const std::string header = R"({"__metadata__":{"format":"pt"},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("a":{"dtype":"I16","shape":[3],"data_offsets":[8,14]}})"
                             "     ";
  ASSERT_EQ(header.size(), 144u);
  const std::string golden = std::string("\x90\0\0\0\0\0\0\0", 8) + header +
                             std::string(
                                 "\x00\x00\x80\x3F"  // 1.0f
                                 "\x00\x00\x00\xC0"  // -2.0f
                                 "\x01\x00"          // 1
                                 "\xFE\xFF"          // -2
                                 "\x03\x00",         // 3
                                 14);
  ASSERT_EQ(golden.size(), 166u);

  std::map<std::string, at::Tensor> tensors;
  tensors["a"] = at::tensor({1, -2, 3}, at::kShort);
  tensors["b"] = at::tensor({1.0f, -2.0f}, at::kFloat);
  EXPECT_EQ(serialize_safetensors(tensors), golden);
  const std::string p = path("golden.safetensors");
  save_safetensors(p, tensors);
  EXPECT_EQ(read_bytes(p), golden);

  write_bytes(p, golden);
  const SafetensorsFile loaded = load_safetensors(p);
  expect_same_tensors(tensors, loaded.tensors);
  EXPECT_EQ(loaded.metadata.at("format"), "pt");

  const SafetensorsHeader h = read_safetensors_header(p);
  EXPECT_EQ(h.header_bytes, 144u);
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "b");
  EXPECT_EQ(h.tensors[0].dtype, at::kFloat);
  EXPECT_EQ(h.tensors[0].shape, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(h.tensors[1].name, "a");
  EXPECT_EQ(h.tensors[1].dtype, at::kShort);
  EXPECT_EQ(h.tensors[1].data_begin, 8u);
  EXPECT_EQ(h.tensors[1].data_end, 14u);
}

TEST_F(SafetensorsTest, HeaderIsPaddedAndOffsetsAreAlignedAndContiguous) {
  std::mt19937 rng(7);
  const at::ScalarType types[] = {at::kDouble, at::kFloat, at::kHalf, at::kBFloat16, at::kLong,
                                  at::kInt,    at::kShort, at::kChar, at::kByte,     at::kBool};
  for (int trial = 0; trial < 20; ++trial) {
    std::map<std::string, at::Tensor> tensors;
    const int count = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < count; ++i) {
      const at::ScalarType type = types[rng() % std::size(types)];
      const std::int64_t n = static_cast<std::int64_t>(rng() % 7);  // odd sizes break alignment
      std::string name = "t";
      name += std::to_string(rng() % 1000);
      tensors[name] = at::zeros({n}, type);
    }
    std::map<std::string, std::string> metadata;
    metadata["k"] = std::string(rng() % 9, 'x');  // varies the header length
    const std::string bytes = serialize_safetensors(tensors, metadata);

    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    ASSERT_EQ(n % 8, 0u) << "trial " << trial;
    const std::string header = bytes.substr(8, n);
    const std::size_t content = header.find_last_not_of(' ') + 1;
    EXPECT_LT(header.size() - content, 8u) << "more padding than needed";
    const nlohmann::json j = nlohmann::json::parse(header);
    std::vector<std::tuple<std::uint64_t, std::uint64_t, std::size_t>> ranges;
    for (const auto& [name, entry] : j.items()) {
      if (name == "__metadata__") continue;
      const std::size_t size = c10::elementSize(tensors.at(name).scalar_type());
      ranges.emplace_back(entry["data_offsets"][0].get<std::uint64_t>(),
                          entry["data_offsets"][1].get<std::uint64_t>(), size);
    }
    std::sort(ranges.begin(), ranges.end());
    std::uint64_t expected = 0;
    for (const auto& [begin, end, size] : ranges) {
      EXPECT_EQ(begin, expected) << "trial " << trial;
      EXPECT_EQ(begin % size, 0u) << "trial " << trial << ": misaligned";
      expected = end;
    }
    EXPECT_EQ(8 + n + expected, bytes.size());
    expect_same_tensors(tensors, deserialize_safetensors(bytes).tensors);
  }
}

}  // namespace safetensors_layout_test
}  // namespace ctrainer
