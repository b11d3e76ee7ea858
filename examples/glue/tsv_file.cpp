#include <ctrainer/examples/glue/tsv_file.h>

#include <fstream>
#include <sstream>

#include <ctrainer/core/errors.h>

namespace ctrainer::glue {

std::vector<std::string_view> split_tsv_line(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return fields;
    }
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
}

TsvFile TsvFile::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ArgumentError("cannot read " + path + ": no such file or not readable");
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) throw ArgumentError("cannot read " + path + ": I/O error");
  return TsvFile(path, std::move(content).str());
}

TsvFile::TsvFile(std::string path, std::string content)
    : path_(std::move(path)), content_(std::move(content)) {
  std::string_view rest(content_);
  static constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (rest.substr(0, kBom.size()) == kBom) rest.remove_prefix(kBom.size());
  while (!rest.empty()) {
    const size_t newline = rest.find('\n');
    std::string_view line = rest.substr(0, newline);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines_.push_back(line);
    if (newline == std::string_view::npos) break;
    rest.remove_prefix(newline + 1);
  }
}

std::string TsvFile::where(int64_t line_number) const {
  return path_ + ":" + std::to_string(line_number);
}

}  // namespace ctrainer::glue
