#pragma once
// The command lines of the parity dump programs: "--flag value" pairs, each flag one they know.
#include <map>
#include <set>
#include <string>

#include <ctrainer/core/errors.h>

namespace ctrainer::parity {

/// {flag without "--": value}; an unknown flag or one without a value throws ArgumentError with
/// `usage`.
inline std::map<std::string, std::string> parse_dump_flags(int argc, char** argv,
                                                           const std::set<std::string>& known,
                                                           const std::string& usage) {
  std::map<std::string, std::string> values;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw ArgumentError(flag + " needs a value\n" + usage);
    if (!flag.starts_with("--") || known.count(flag.substr(2)) == 0)
      throw ArgumentError("unknown flag " + flag + "\n" + usage);
    values[flag.substr(2)] = argv[++i];
  }
  return values;
}

}  // namespace ctrainer::parity
