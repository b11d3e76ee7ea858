#pragma once
// Two safetensors files hold the same tensors within a tolerance, for end-to-end tests that
// compare two runs' models (sharded vs DDP, an elastic job vs the same resumes by hand).
#include <gtest/gtest.h>

#include <filesystem>

#include <ctrainer/integrations/safetensors.h>

namespace ctrainer::testing {

/// `actual` holds the tensors of `expected` (names and shapes) and each is within `tolerance`
/// of it (the largest absolute difference); failures name the tensor.
inline void expect_tensors_near(const std::filesystem::path& expected,
                                const std::filesystem::path& actual, double tolerance) {
  const auto want = ctrainer::load_safetensors(expected.string());
  const auto got = ctrainer::load_safetensors(actual.string());
  ASSERT_EQ(got.tensors.size(), want.tensors.size()) << actual << " vs " << expected;
  for (const auto& [name, tensor] : want.tensors) {
    const auto it = got.tensors.find(name);
    ASSERT_NE(it, got.tensors.end()) << "missing tensor " << name << " in " << actual;
    ASSERT_EQ(it->second.sizes(), tensor.sizes()) << name;
    EXPECT_LE((it->second.to(at::kDouble) - tensor.to(at::kDouble)).abs().max().item<double>(),
              tolerance)
        << name;
  }
}

}  // namespace ctrainer::testing
