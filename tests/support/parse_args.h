#pragma once
// Running ArgumentParser on a token list and writing config files, shared by the
// training_args_*_test files.
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer::testing {

/// Runs parser.parse on {"prog", tokens...}.
inline bool run_parse(ArgumentParser& parser, const std::vector<std::string>& tokens,
                      TrainingArguments& args) {
  std::vector<std::string> storage = {"prog"};
  storage.insert(storage.end(), tokens.begin(), tokens.end());
  std::vector<const char*> argv;
  for (const std::string& s : storage) argv.push_back(s.c_str());
  return parser.parse(static_cast<int>(argv.size()), argv.data(), args);
}

inline TrainingArguments parse_ok(const std::vector<std::string>& tokens) {
  ArgumentParser parser("test");
  TrainingArguments args;
  EXPECT_TRUE(run_parse(parser, tokens, args));
  return args;
}

/// The ArgumentError message of parsing `tokens`; fails the test if parsing succeeds.
/// `not_supported` says whether the error must (true) or must not (false) be NotSupportedYet.
inline std::string parse_error(const std::vector<std::string>& tokens, bool not_supported = false) {
  ArgumentParser parser("test");
  TrainingArguments args;
  try {
    run_parse(parser, tokens, args);
  } catch (const NotSupportedYet& e) {
    EXPECT_TRUE(not_supported) << "unexpected NotSupportedYet: " << e.what();
    return e.what();
  } catch (const ArgumentError& e) {
    EXPECT_FALSE(not_supported) << "expected NotSupportedYet, got: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "parsing succeeded";
  return "";
}

/// Writes `content` to a file of the test's temporary folder and returns its path.
inline std::string write_file(const std::string& name, const std::string& content) {
  // The pid keeps parallel test processes (ctest -j) from sharing a file.
  const std::string path = ::testing::TempDir() + "ctrainer_training_args_test_" +
                           std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << content;
  return path;
}

inline std::string joined(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& t : tokens) out += t + " ";
  return out;
}

}  // namespace ctrainer::testing
