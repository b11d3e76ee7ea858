#pragma once
// Asserting on ArgumentError messages, shared by the unit tests.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ctrainer/core/errors.h>

namespace ctrainer::testing {

/// Runs `fn`, which must throw ArgumentError whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning " << parts.front();
  } catch (const ArgumentError& e) {
    const std::string what = e.what();
    for (const auto& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

}  // namespace ctrainer::testing
