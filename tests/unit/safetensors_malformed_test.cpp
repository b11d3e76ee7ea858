// Tests that the safetensors reader rejects malformed input with an error naming the source and
// the problem: each header rule, every truncation, random garbage and mutated files.
#include <ctrainer/integrations/safetensors.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <string_view>

#include "support/safetensors_files.h"

namespace ctrainer {
namespace safetensors_malformed_test {

using testing::expect_same_tensors;
using ::testing::HasSubstr;
using testing::make_file;
using testing::SafetensorsTest;
using testing::u64_le;
using testing::write_bytes;

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

}  // namespace safetensors_malformed_test
}  // namespace ctrainer
