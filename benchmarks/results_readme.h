#pragma once
/// \file `ctrainer-bench report`: rewrites a results folder's README.md from every `*.json`
/// result in it. Each result gets a section whose generated part (command, environment, table,
/// headline metrics, links to the hand-written NAME.md note and to the SVG charts) sits between
///   <!-- generated:begin NAME -->  and  <!-- generated:end NAME -->
/// where NAME is the JSON file's name without ".json". Only that text is replaced; everything
/// else in README.md is hand-written and kept. Results without a section get one appended, and
/// a "(reading to be written)" line before `<!-- readings:end -->` when the hand-written
/// readings at the top do not mention them yet.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer::bench {

/// One result file: NAME (the file name without ".json") and its parsed content.
struct ResultFile {
  std::string name;
  nlohmann::json json;
};

/// Every `*.json` in `dir`, sorted by name. Throws std::runtime_error naming the file (and what
/// to do) when one is not valid JSON or has no "scenario", and naming the folder when it is
/// missing or holds no result.
std::vector<ResultFile> read_results(const std::filesystem::path& dir);

/// The generated part of `result`'s section (the text between its markers). `dir` is the
/// results folder: links point only to the note and the charts that exist there.
std::string render_section(const ResultFile& result, const std::filesystem::path& dir);

/// What merge_readme did.
struct ReadmeUpdate {
  std::string text;                   ///< the new README.md
  std::vector<std::string> replaced;  ///< sections whose generated part was rewritten
  std::vector<std::string> appended;  ///< sections added at the end
};

/// `readme` (the current README.md, "" when there is none) with the generated part of every
/// section in `sections` (NAME → generated text) replaced, or appended when it has no markers.
/// Throws std::runtime_error naming `readme_path` when a section's markers are broken (begin
/// without end, or twice).
ReadmeUpdate merge_readme(const std::string& readme,
                          const std::vector<std::pair<std::string, std::string>>& sections,
                          const std::string& readme_path);

/// Reads the results in `dir`, merges them into `dir`/README.md and writes it (to a temporary
/// file first, then renamed, so that a failure never leaves half a README). Throws
/// std::runtime_error naming the path when it cannot be written.
ReadmeUpdate write_results_readme(const std::filesystem::path& dir);

}  // namespace ctrainer::bench
