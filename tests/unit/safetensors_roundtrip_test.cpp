// Tests that the safetensors writer and reader round-trip tensors of every dtype, shape and
// stride, metadata and names, through a file and through memory.
#include <ctrainer/integrations/safetensors.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "support/safetensors_files.h"

namespace ctrainer {
namespace safetensors_roundtrip_test {

using testing::every_dtype;
using testing::expect_same_tensors;
using testing::read_bytes;
using testing::SafetensorsTest;

TEST_F(SafetensorsTest, RoundTripsEveryDtypeThroughAFile) {
  const auto tensors = every_dtype();
  const std::string p = path("all.safetensors");
  save_safetensors(p, tensors);
  const SafetensorsFile loaded = load_safetensors(p);
  expect_same_tensors(tensors, loaded.tensors);
  // Sanity that the values are the interesting ones, not just equal bytes of zeros.
  EXPECT_TRUE(std::isnan(loaded.tensors.at("f32")[2].item<float>()));
  EXPECT_EQ(loaded.tensors.at("i64")[0].item<std::int64_t>(),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(loaded.tensors.at("f16")[1].item<float>(), -65504.0f);
  EXPECT_EQ(loaded.tensors.at("bf16")[2].item<float>(), 0.0078125f);
  EXPECT_EQ(loaded.tensors.at("i8")[0].item<std::int64_t>(), -128);
  EXPECT_EQ(loaded.tensors.at("bool")[1].item<bool>(), false);
  EXPECT_EQ(loaded.tensors.at("bool")[4].item<bool>(), true);
}

TEST_F(SafetensorsTest, RoundTripsThroughMemoryWithSameBytesAsTheFile) {
  const auto tensors = every_dtype();
  const std::string bytes = serialize_safetensors(tensors);
  expect_same_tensors(tensors, deserialize_safetensors(bytes).tensors);
  const std::string p = path("all.safetensors");
  save_safetensors(p, tensors);
  EXPECT_EQ(read_bytes(p), bytes);
}

TEST_F(SafetensorsTest, RoundTripsScalarsAndEmptyTensors) {
  std::map<std::string, at::Tensor> tensors;
  tensors["scalar_f32"] = at::scalar_tensor(-3.5, at::kFloat);
  tensors["scalar_i64"] = at::scalar_tensor(42, at::kLong);
  tensors["scalar_bool"] = at::scalar_tensor(true, at::kBool);
  tensors["empty_1d"] = at::empty({0}, at::kFloat);
  tensors["empty_3d"] = at::empty({3, 0, 2}, at::kDouble);
  tensors["empty_i8"] = at::empty({0, 5}, at::kChar);
  tensors["tail"] = at::arange(5, at::kShort);
  const std::string p = path("edge.safetensors");
  save_safetensors(p, tensors);
  const SafetensorsFile loaded = load_safetensors(p);
  expect_same_tensors(tensors, loaded.tensors);
  EXPECT_EQ(loaded.tensors.at("scalar_f32").dim(), 0);
  EXPECT_EQ(loaded.tensors.at("scalar_f32").item<float>(), -3.5f);
  EXPECT_EQ(loaded.tensors.at("empty_3d").sizes(), (std::vector<std::int64_t>{3, 0, 2}));

  const SafetensorsHeader header = read_safetensors_header(p);
  for (const auto& info : header.tensors) {
    if (info.name == "scalar_f32") EXPECT_TRUE(info.shape.empty());
    if (info.name == "empty_3d") EXPECT_EQ(info.data_begin, info.data_end);
  }
}

TEST_F(SafetensorsTest, AnEmptyMapGivesAValidFile) {
  const std::string bytes = serialize_safetensors({});
  const SafetensorsFile loaded = deserialize_safetensors(bytes);
  EXPECT_TRUE(loaded.tensors.empty());
  EXPECT_EQ(loaded.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
}

TEST_F(SafetensorsTest, WritesNonContiguousTensorsAsTheirValues) {
  const at::Tensor base = at::arange(24, at::kFloat).reshape({4, 6});
  std::map<std::string, at::Tensor> tensors;
  tensors["transposed"] = base.t();
  tensors["stepped"] = base.slice(1, 1, 6, 2);                                 // columns 1, 3, 5
  tensors["rows_stepped"] = base.slice(0, 0, 4, 3);                            // rows 0 and 3
  tensors["expanded"] = at::arange(3, at::kLong).unsqueeze(0).expand({4, 3});  // stride 0
  tensors["negated"] = at::_neg_view(at::arange(4, at::kDouble));              // lazy neg bit
  tensors["diag"] = base.slice(1, 0, 4).diagonal();
  for (const auto& [name, t] : tensors) {
    if (name != "negated") EXPECT_FALSE(t.is_contiguous()) << name;
  }
  const SafetensorsFile loaded = deserialize_safetensors(serialize_safetensors(tensors));
  for (const auto& [name, t] : tensors) {
    const at::Tensor& got = loaded.tensors.at(name);
    EXPECT_TRUE(got.is_contiguous()) << name;
    EXPECT_TRUE(at::equal(got, t.resolve_neg().contiguous())) << name;
  }
  EXPECT_TRUE(at::equal(loaded.tensors.at("negated"), -at::arange(4, at::kDouble)));
  EXPECT_EQ(loaded.tensors.at("stepped")[0][2].item<float>(), 5.0f);
}

TEST_F(SafetensorsTest, RoundTripsMetadata) {
  const std::map<std::string, at::Tensor> tensors{{"w", at::ones({2})}};
  // Defaults to format=pt.
  EXPECT_EQ(deserialize_safetensors(serialize_safetensors(tensors)).metadata,
            (std::map<std::string, std::string>{{"format", "pt"}}));
  // Caller's values, with characters JSON must escape and non-ASCII text, kept as given;
  // an explicit format is not overwritten.
  const std::map<std::string, std::string> metadata{
      {"format", "np"},
      {"step", "1200"},
      {"quote\"and\\backslash", "line\nbreak\ttab\x01"},
      {"unicode", "\xC3\xA9t\xC3\xA9 \xE2\x9C\x93"},
      {"empty", ""},
  };
  const std::string p = path("md.safetensors");
  save_safetensors(p, tensors, metadata);
  const SafetensorsFile loaded = load_safetensors(p);
  EXPECT_EQ(loaded.metadata, metadata);
  EXPECT_EQ(read_safetensors_header(p).metadata, metadata);
}

TEST_F(SafetensorsTest, RoundTripsNamesThatNeedEscaping) {
  std::map<std::string, at::Tensor> tensors;
  tensors["model.layers.0.weight"] = at::ones({2});
  tensors["with \"quotes\" and \\"] = at::zeros({1});
  tensors["ctl\x01\n"] = at::full({1}, 3.0);
  tensors["\xE6\x9D\x83\xE9\x87\x8D"] = at::full({1}, 4.0);
  tensors[""] = at::full({1}, 5.0);
  expect_same_tensors(tensors, deserialize_safetensors(serialize_safetensors(tensors)).tensors);
}

TEST_F(SafetensorsTest, LoadsManySmallAndSomeLargeTensors) {
  // Exercises both read paths: batched small tensors and direct reads of large ones.
  std::map<std::string, at::Tensor> tensors;
  for (int i = 0; i < 3000; ++i) {
    tensors["small." + std::to_string(i)] = at::full({i % 17}, static_cast<double>(i), at::kFloat);
  }
  for (int i = 0; i < 3; ++i) {
    tensors["large." + std::to_string(i)] = at::randn({1 << 19}, at::kFloat);  // 2 MiB
  }
  tensors["huge"] = at::randint(0, 1000, {5 << 20}, at::kLong);  // 40 MiB
  const std::string p = path("many.safetensors");
  save_safetensors(p, tensors);
  const SafetensorsFile loaded = load_safetensors(p);
  expect_same_tensors(tensors, loaded.tensors);
}

}  // namespace safetensors_roundtrip_test
}  // namespace ctrainer
