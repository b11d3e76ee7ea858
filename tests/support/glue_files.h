#pragma once
// Files the run_glue end-to-end tests write and read: slices of the bundled GLUE TSVs, JSON
// results and text predictions.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer::testing {

inline std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

/// The first `rows` records of a GLUE file (plus its header line when it has one); returns the
/// number of records written (WNLI's dev and test have fewer than 200).
inline int write_slice(const std::filesystem::path& from, const std::filesystem::path& to, int rows,
                       bool has_header) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  std::string line;
  int lines = 0;
  for (; lines < rows + (has_header ? 1 : 0) && std::getline(in, line); ++lines)
    out << line << '\n';
  return lines - (has_header ? 1 : 0);
}

}  // namespace ctrainer::testing
