#pragma once
/// \file Reading GLUE-style TSV files: one record per line, fields split on tabs, no quoting.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ctrainer::glue {

/// Splits one line on '\t'. Quotes are ordinary characters (GLUE files contain unbalanced `"`),
/// so a field never spans lines or tabs.
std::vector<std::string_view> split_tsv_line(std::string_view line);

/// A whole TSV file in memory, iterated line by line with 1-based line numbers. A UTF-8 byte
/// order mark at the start (MRPC's files) is dropped, a '\r' before '\n' is dropped, and the
/// final line may lack its '\n'.
class TsvFile {
 public:
  /// Reads `path`; throws ArgumentError naming it when it cannot be read.
  static TsvFile read(const std::string& path);
  /// A file from memory (tests); `path` names it in messages.
  TsvFile(std::string path, std::string content);
  // The line views point into `content_`: a moved std::string may move its (small) buffer.
  TsvFile(const TsvFile&) = delete;
  TsvFile& operator=(const TsvFile&) = delete;

  const std::string& path() const { return path_; }
  /// The lines in file order (views into the content held by this object).
  const std::vector<std::string_view>& lines() const { return lines_; }
  /// "path:line", for error messages.
  std::string where(int64_t line_number) const;

 private:
  std::string path_;
  std::string content_;
  std::vector<std::string_view> lines_;
};

}  // namespace ctrainer::glue
