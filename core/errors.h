#pragma once
/// \file Error types for bad user input. Messages name the input and the fix.
#include <stdexcept>
#include <string>

namespace ctrainer {

/// A flag, JSON value, config or other user input is invalid. `what()` names the input and
/// says how to fix it; command-line front ends print it and exit with code 2.
class ArgumentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A flag that is parsed and validated but whose feature has not landed yet. The message reads
/// "not supported yet: --<flag> ..." so nothing is ever silently ignored.
class NotSupportedYet : public ArgumentError {
 public:
  NotSupportedYet(const std::string& flag, const std::string& detail)
      : ArgumentError("not supported yet: --" + flag +
                      (detail.empty() ? "" : " (" + detail + ")")) {}
};

}  // namespace ctrainer
