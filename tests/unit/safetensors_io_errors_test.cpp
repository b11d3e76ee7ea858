// Tests of errors while writing or reading safetensors files: I/O failures name the path, a full
// disk is an error, bad tensors leave an existing file untouched, and files are overwritten.
#include <ctrainer/integrations/safetensors.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "support/safetensors_files.h"

namespace ctrainer {
namespace safetensors_io_errors_test {

using ::testing::HasSubstr;
using testing::read_bytes;
using testing::SafetensorsTest;
namespace fs = std::filesystem;

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

}  // namespace safetensors_io_errors_test
}  // namespace ctrainer
