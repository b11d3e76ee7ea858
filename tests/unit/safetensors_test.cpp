// Tests of the safetensors reader and writer: round trips, the exact byte layout, and rejection
// of malformed, truncated and random input.
#include <ctrainer/integrations/safetensors.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer {
namespace {

using ::testing::HasSubstr;
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

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string u64_le(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file from a header text (length prefix computed, no padding added) and a data section.
std::string make_file(const std::string& header, const std::string& data) {
  return u64_le(header.size()) + header + data;
}

// Tensors are equal when dtype, shape and every byte match (NaN payloads included).
void expect_bitwise_equal(const at::Tensor& expected, const at::Tensor& actual,
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

void expect_same_tensors(const std::map<std::string, at::Tensor>& expected,
                         const std::map<std::string, at::Tensor>& actual) {
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, t] : expected) {
    auto it = actual.find(name);
    ASSERT_NE(it, actual.end()) << "missing tensor " << name;
    expect_bitwise_equal(t, it->second, name);
  }
}

std::map<std::string, at::Tensor> every_dtype() {
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

// ---- rejection of malformed input --------------------------------------------------------------

// Deserialising `bytes` must throw a SafetensorsError naming the source and containing `needle`.
void expect_rejected(const std::string& bytes, const std::string& needle) {
  try {
    deserialize_safetensors(bytes, "bad.safetensors");
    ADD_FAILURE() << "accepted, expected an error containing: " << needle;
  } catch (const SafetensorsError& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.safetensors")) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(needle)) << e.what();
  }
}

// A one-tensor header around `entry` (the JSON object of tensor "x").
std::string one_tensor(const std::string& entry, const std::string& data) {
  return make_file(R"({"x":)" + entry + "}", data);
}

TEST(SafetensorsMalformed, RejectsBadSizes) {
  expect_rejected("", "too short");
  expect_rejected("abc", "too short");
  expect_rejected(std::string(7, '\0'), "too short");
  expect_rejected(u64_le(100'000'001) + "{}", "exceeds the limit");
  expect_rejected(u64_le(std::numeric_limits<std::uint64_t>::max()) + "{}", "exceeds the limit");
  expect_rejected(u64_le(100) + "{}", "runs past the end of the file");
  expect_rejected(u64_le(3) + "{}", "runs past the end of the file");
  expect_rejected(u64_le(0), "starting with '{'");
}

TEST(SafetensorsMalformed, RejectsHeadersThatAreNotJsonObjects) {
  expect_rejected(make_file("{abc", ""), "not valid UTF-8 JSON");
  expect_rejected(make_file("[1, 2]", ""), "JSON object");
  expect_rejected(make_file(" {}", ""), "JSON object");  // must start with '{'
  expect_rejected(make_file("\"str\"", ""), "JSON object");
  expect_rejected(make_file("{}}", ""), "not valid UTF-8 JSON");
  expect_rejected(make_file("{} x", ""), "not valid UTF-8 JSON");
  expect_rejected(make_file(std::string("{}\0", 3), ""), "NUL byte at offset 2");
  expect_rejected(make_file(std::string("{}\0garbage", 10), ""), "NUL byte");
  expect_rejected(make_file(std::string("{\"a\0\":1}", 8), ""), "NUL byte");
  expect_rejected(make_file("{\"\xff\":1}", ""), "not valid UTF-8 JSON");
  expect_rejected(make_file("{\"a\":\"\xC3\"}", ""), "not valid UTF-8 JSON");
}

TEST(SafetensorsMalformed, AcceptsWhitespacePaddingAndUnknownFields) {
  const auto f = deserialize_safetensors(
      one_tensor(R"({"dtype":"U8","shape":[2],"data_offsets":[0,2],"extra":[1]})", "\x01\x02"));
  EXPECT_EQ(f.tensors.at("x")[1].item<int>(), 2);
  const std::string padded = "{\"x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}} \n\t";
  EXPECT_EQ(deserialize_safetensors(make_file(padded, "\x07")).tensors.at("x")[0].item<int>(), 7);
  EXPECT_TRUE(deserialize_safetensors(make_file("{}", "")).tensors.empty());
}

TEST(SafetensorsMalformed, RejectsDuplicateKeys) {
  const std::string e = R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  expect_rejected(make_file(R"({"x":)" + e + R"(,"x":)" + e + "}", "\x01"), "duplicate key 'x'");
  expect_rejected(make_file(R"({"__metadata__":{"a":"1","a":"2"}})", ""), "duplicate key 'a'");
  expect_rejected(make_file(R"({"__metadata__":{},"__metadata__":{}})", ""),
                  "duplicate key '__metadata__'");
  expect_rejected(
      one_tensor(R"({"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]})", "\x01"),
      "duplicate key 'dtype'");
}

TEST(SafetensorsMalformed, RejectsEntriesWithMissingOrMistypedFields) {
  expect_rejected(one_tensor("5", ""), "must be an object");
  expect_rejected(one_tensor("[]", ""), "must be an object");
  expect_rejected(one_tensor(R"({"shape":[1],"data_offsets":[0,1]})", "x"), "missing 'dtype'");
  expect_rejected(one_tensor(R"({"dtype":"U8","data_offsets":[0,1]})", "x"), "missing 'shape'");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[1]})", "x"), "missing 'data_offsets'");
  expect_rejected(one_tensor(R"({"dtype":7,"shape":[1],"data_offsets":[0,1]})", "x"),
                  "'dtype' must be a string");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":"1","data_offsets":[0,1]})", "x"),
                  "'shape' must be an array");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":{},"data_offsets":[0,1]})", "x"),
                  "'shape' must be an array");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[1],"data_offsets":"0"})", "x"),
                  "'data_offsets' must be an array of two");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[1],"data_offsets":[0]})", "x"),
                  "'data_offsets' must be an array of two");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1,1]})", "x"),
                  "'data_offsets' must be an array of two");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[1],"data_offsets":[0,-1]})", "x"),
                  "'data_offsets' must be an array of two");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1.0]})", "x"),
                  "'data_offsets' must be an array of two");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1e30]})", "x"),
                  "'data_offsets' must be an array of two");
  expect_rejected(
      one_tensor(R"({"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616]})", "x"),
      "'data_offsets' must be an array of two");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[1],"data_offsets":[null,1]})", "x"),
                  "'data_offsets' must be an array of two");
}

TEST(SafetensorsMalformed, RejectsUnknownAndUnsupportedDtypes) {
  expect_rejected(one_tensor(R"({"dtype":"F99","shape":[1],"data_offsets":[0,1]})", "x"),
                  "unknown dtype 'F99'");
  expect_rejected(one_tensor(R"({"dtype":"f32","shape":[1],"data_offsets":[0,4]})", "xxxx"),
                  "unknown dtype 'f32'");
  // Newer formats than this reader knows (safetensors' 4- and 6-bit floats) are named.
  expect_rejected(one_tensor(R"({"dtype":"F4","shape":[2],"data_offsets":[0,1]})", "x"),
                  "unknown dtype 'F4'");
}

TEST(SafetensorsMalformed, RejectsBadShapes) {
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[-1],"data_offsets":[0,0]})", ""),
                  "non-negative integers, element 0 is -1");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[1,2.5],"data_offsets":[0,0]})", ""),
                  "element 1 is 2.5");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[1,"2"],"data_offsets":[0,2]})", "xx"),
                  "element 1 is the string '2'");
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[[1]],"data_offsets":[0,1]})", "x"),
                  "non-negative integers");
  expect_rejected(
      one_tensor(R"({"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]})", ""),
      "non-negative integers");
  expect_rejected(one_tensor(R"({"dtype":"F32","shape":[4611686018427387904,4],)"
                             R"("data_offsets":[0,0]})",
                             ""),
                  "is too large");
  // Zero elements, but contiguous strides would overflow int64 inside libtorch.
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[0,4294967296,4294967296],)"
                             R"("data_offsets":[0,0]})",
                             ""),
                  "is too large");
}

TEST(SafetensorsMalformed, RejectsBadOffsets) {
  expect_rejected(one_tensor(R"({"dtype":"U8","shape":[0],"data_offsets":[8,0]})", ""),
                  "end before they begin");
  expect_rejected(one_tensor(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})", "12345678"),
                  "out of range: the data section is 8 bytes");
  expect_rejected(
      one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[0,12]})", std::string(12, 'x')),
      "span 12 bytes, but shape [2] of dtype F32 needs 8 bytes");
  expect_rejected(one_tensor(R"({"dtype":"BF16","shape":[2,2],"data_offsets":[0,4]})", "xxxx"),
                  "needs 8 bytes");
}

TEST(SafetensorsMalformed, RejectsOverlapsHolesAndTrailingBytes) {
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  expect_rejected(make_file("{" + a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                            std::string(12, 'x')),
                  "tensor 'b' at data_offsets [4, 12] overlaps tensor 'a' at [0, 8]");
  expect_rejected(make_file("{" + a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                            std::string(8, 'x')),
                  "overlaps");
  // An empty tensor inside another one's bytes overlaps it too.
  expect_rejected(make_file("{" + a + R"(,"b":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                            std::string(8, 'x')),
                  "overlaps");
  expect_rejected(make_file("{" + a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
                            std::string(20, 'x')),
                  "hole in the data section: bytes [8, 12] belong to no tensor");
  expect_rejected(
      one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[4,12]})", std::string(12, 'x')),
      "hole in the data section: bytes [0, 4]");
  expect_rejected(make_file("{" + a + "}", std::string(12, 'x')), "4 trailing bytes");
  expect_rejected(make_file("{}", "x"), "1 trailing bytes");
  // Empty tensors may share an offset, and the order in the JSON does not matter.
  const auto ok = deserialize_safetensors(
      make_file(R"({"c":{"dtype":"U8","shape":[1],"data_offsets":[8,9]},)"
                R"("e1":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},)"
                R"("e2":{"dtype":"F32","shape":[0,3],"data_offsets":[8,8]},)" +
                    a + "}",
                std::string(8, '\0') + "\x05"));
  EXPECT_EQ(ok.tensors.size(), 4u);
  EXPECT_EQ(ok.tensors.at("c")[0].item<int>(), 5);
}

TEST(SafetensorsMalformed, RejectsMetadataThatIsNotStringToString) {
  expect_rejected(make_file(R"({"__metadata__":"pt"})", ""), "'__metadata__' must be an object");
  expect_rejected(make_file(R"({"__metadata__":null})", ""), "'__metadata__' must be an object");
  expect_rejected(make_file(R"({"__metadata__":["format"]})", ""),
                  "'__metadata__' must be an object");
  expect_rejected(make_file(R"({"__metadata__":{"step":12}})", ""), "key 'step' holds 12");
  expect_rejected(make_file(R"({"__metadata__":{"nested":{"a":"b"}}})", ""),
                  "key 'nested' holds an object");
}

TEST(SafetensorsMalformed, RejectsBoolBytesOtherThanZeroAndOne) {
  expect_rejected(one_tensor(R"({"dtype":"BOOL","shape":[3],"data_offsets":[0,3]})",
                             std::string("\x01\x00\x02", 3)),
                  "BOOL element 2 is byte 2");
}

TEST(SafetensorsMalformed, RejectsEveryTruncationOfAValidFile) {
  std::map<std::string, at::Tensor> tensors;
  tensors["a"] = at::arange(6, at::kFloat).reshape({2, 3});
  tensors["b"] = at::tensor({1, 0}, at::kInt).to(at::kBool);
  tensors["c"] = at::arange(3, at::kLong);
  const std::string bytes = serialize_safetensors(tensors, {{"note", "x"}});
  ASSERT_GT(bytes.size(), 100u);
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    EXPECT_THROW(deserialize_safetensors(std::string_view(bytes).substr(0, len)), SafetensorsError)
        << "prefix of " << len << " bytes";
  }
  expect_same_tensors(tensors, deserialize_safetensors(bytes).tensors);
}

TEST_F(SafetensorsTest, RejectsEveryTruncatedFileOnDisk) {
  std::map<std::string, at::Tensor> tensors{{"w", at::arange(10, at::kShort)}};
  const std::string bytes = serialize_safetensors(tensors);
  const std::string p = path("trunc.safetensors");
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    write_bytes(p, std::string_view(bytes).substr(0, len));
    try {
      load_safetensors(p);
      ADD_FAILURE() << "accepted a prefix of " << len << " bytes";
    } catch (const SafetensorsError& e) {
      EXPECT_THAT(e.what(), HasSubstr(p));
    }
  }
}

// Anything but success or SafetensorsError (another exception, a crash, a sanitizer report)
// fails the test.
void expect_clean_outcome(const std::string& bytes) {
  try {
    deserialize_safetensors(bytes);
  } catch (const SafetensorsError&) {
  }
}

TEST(SafetensorsMalformed, SurvivesRandomGarbage) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 3000; ++i) {
    std::string bytes(rng() % 300, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    // Half the time a plausible length prefix, so the JSON parser sees the garbage.
    if (bytes.size() >= 8 && i % 2 == 0) {
      const std::string prefix = u64_le(rng() % (bytes.size() - 7));
      bytes.replace(0, 8, prefix);
      if (bytes.size() > 8) bytes[8] = '{';
    }
    expect_clean_outcome(bytes);
  }
}

TEST(SafetensorsMalformed, SurvivesMutationsOfAValidFile) {
  std::map<std::string, at::Tensor> tensors;
  tensors["a"] = at::arange(6, at::kFloat).reshape({2, 3});
  tensors["b"] = at::tensor({1, 0}, at::kInt).to(at::kBool);
  tensors["c"] = at::arange(3, at::kLong);
  const std::string bytes = serialize_safetensors(tensors);
  // Characters that turn one valid header into another or into subtly broken ones.
  const std::string interesting = "0123456789-.,:[]{}\"eE ";
  std::mt19937 rng(99);
  int accepted = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string m = bytes;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t pos = rng() % m.size();
      switch (rng() % 3) {
        case 0:
          m[pos] = static_cast<char>(rng());
          break;
        case 1:
          m[pos] = interesting[rng() % interesting.size()];
          break;
        default:
          m.erase(pos, 1);
          break;
      }
    }
    try {
      deserialize_safetensors(m);
      ++accepted;
    } catch (const SafetensorsError&) {
    }
  }
  // Mutated data bytes still load: the check is that nothing else escaped or crashed.
  EXPECT_GT(accepted, 0);
}

// ---- errors while writing or reading files -----------------------------------------------------

TEST_F(SafetensorsTest, IoErrorsNameThePath) {
  const std::string missing_dir = path("no/such/dir/x.safetensors");
  try {
    save_safetensors(missing_dir, {{"w", at::ones({2})}});
    ADD_FAILURE() << "saved into a missing directory";
  } catch (const SafetensorsError& e) {
    EXPECT_THAT(e.what(), HasSubstr(missing_dir));
    EXPECT_THAT(e.what(), HasSubstr("cannot open for writing"));
  }
  try {
    load_safetensors(path("missing.safetensors"));
    ADD_FAILURE() << "loaded a missing file";
  } catch (const SafetensorsError& e) {
    EXPECT_THAT(e.what(), HasSubstr("missing.safetensors"));
    EXPECT_THAT(e.what(), HasSubstr("No such file"));
  }
  try {
    load_safetensors(dir_.string());
    ADD_FAILURE() << "loaded a directory";
  } catch (const SafetensorsError& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir_.string()));
  }
}

TEST_F(SafetensorsTest, DiskFullIsAnError) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  try {
    save_safetensors("/dev/full", {{"w", at::ones({1024})}});
    ADD_FAILURE() << "write to /dev/full succeeded";
  } catch (const SafetensorsError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/dev/full"));
    EXPECT_THAT(e.what(), HasSubstr("No space left"));
  }
  EXPECT_TRUE(fs::exists("/dev/full"));  // a device is never unlinked on failure
}

TEST_F(SafetensorsTest, BadTensorsAreRejectedBeforeTheFileIsTouched) {
  const std::string p = path("keep.safetensors");
  save_safetensors(p, {{"w", at::ones({3})}});
  const std::string before = read_bytes(p);
  auto expect_bad = [&](const std::map<std::string, at::Tensor>& tensors,
                        const std::string& needle) {
    try {
      save_safetensors(p, tensors);
      ADD_FAILURE() << "saved, expected: " << needle;
    } catch (const SafetensorsError& e) {
      EXPECT_THAT(e.what(), HasSubstr(p));
      EXPECT_THAT(e.what(), HasSubstr(needle));
    }
    EXPECT_EQ(read_bytes(p), before) << needle;
  };
  expect_bad({{"ok", at::ones({1})}, {"c", at::ones({2}, at::kComplexDouble)}},
             "tensor 'c': dtype ComplexDouble cannot be stored");
  expect_bad({{"u", at::Tensor()}}, "tensor 'u': is undefined");
  expect_bad({{"__metadata__", at::ones({1})}}, "reserved for metadata");
  expect_bad({{"s", at::ones({2, 2}).to_sparse()}}, "non-strided");
  expect_bad({{"m", at::empty({2}, at::TensorOptions().device(at::kMeta))}}, "meta device");
  expect_bad({{"bad\xff", at::ones({1})}}, "tensor name");
  try {
    save_safetensors(p, {{"w", at::ones({1})}}, {{"k", "\xC3"}});
    ADD_FAILURE() << "saved invalid UTF-8 metadata";
  } catch (const SafetensorsError& e) {
    EXPECT_THAT(e.what(), HasSubstr("metadata value"));
  }
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_THROW(safetensors_dtype_name(at::kComplexDouble), SafetensorsError);
  EXPECT_EQ(safetensors_dtype_name(at::kBFloat16), "BF16");
}

TEST_F(SafetensorsTest, OverwritesAnExistingFile) {
  const std::string p = path("over.safetensors");
  save_safetensors(p, {{"big", at::ones({1000})}});
  save_safetensors(p, {{"small", at::zeros({2})}});
  const SafetensorsFile loaded = load_safetensors(p);
  ASSERT_EQ(loaded.tensors.size(), 1u);
  EXPECT_TRUE(loaded.tensors.count("small"));
}

}  // namespace
}  // namespace ctrainer
