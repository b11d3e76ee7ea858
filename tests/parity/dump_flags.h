#pragma once
// The command lines of the parity dump programs: "--flag value" pairs, each flag one they know.
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

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

/// The main of a dump program run as `<program> --cases FILE.json`: every case of the file's
/// list goes through `run_case` in this one process (one libtorch start for all), and its result
/// is printed as one JSON line. Returns the exit status (2 with a message on bad flags or file).
inline int run_cases_main(int argc, char** argv, const std::string& program,
                          const std::function<nlohmann::json(const nlohmann::json&)>& run_case) {
  const std::string usage = "usage: " + program + " --cases FILE.json\n";
  try {
    auto flags = parse_dump_flags(argc, argv, {"cases"}, usage);
    if (!flags.count("cases")) throw ArgumentError("--cases is required\n" + usage);
    std::ifstream in(flags["cases"]);
    if (!in) throw ArgumentError("--cases: cannot read " + flags["cases"]);
    for (const auto& c : nlohmann::json::parse(in)) std::printf("%s\n", run_case(c).dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 2;
  }
}

}  // namespace ctrainer::parity
