#pragma once
// Parameters written as text by the multi-process test workers (parameter_dump.h): one line per
// parameter, "name v0 v1 ..." with hex floats, so files compare bitwise and parse exactly. No
// torch here: the tests that read them build quickly.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace ctrainer::testing {

/// The whole file as a string ("" when it is missing).
inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// name -> values of a parameter file.
inline std::map<std::string, std::vector<double>> parse_parameters(const std::string& text) {
  std::map<std::string, std::vector<double>> parameters;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name, value;
    fields >> name;
    auto& values = parameters[name];
    while (fields >> value) values.push_back(std::strtod(value.c_str(), nullptr));
  }
  return parameters;
}

}  // namespace ctrainer::testing
