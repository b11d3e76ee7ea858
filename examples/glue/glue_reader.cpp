#include <ctrainer/examples/glue/glue_reader.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>
#include <ctrainer/examples/glue/tsv_file.h>

namespace ctrainer::glue {
namespace {

/// Where each needed field sits in a row, resolved from the header once.
struct ColumnLayout {
  size_t num_columns = 0;
  size_t text_a = 0;
  std::optional<size_t> text_b;
  std::optional<size_t> label;
};

size_t find_column(const std::vector<std::string>& header, const std::string& name,
                   const TsvFile& file, const std::string& task) {
  auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end())
    throw ArgumentError(file.where(1) + ": the header has no column '" + name +
                        "' needed by GLUE task " + task + " (header: " + join(header) +
                        "); is this the original GLUE file of that task?");
  return static_cast<size_t>(it - header.begin());
}

ColumnLayout resolve_layout(const GlueTask& task, const std::vector<std::string>& header,
                            const TsvFile& file, bool labeled) {
  ColumnLayout layout;
  layout.num_columns = header.size();
  layout.text_a = find_column(header, task.text_a_column, file, task.name);
  if (task.text_b_column) layout.text_b = find_column(header, *task.text_b_column, file, task.name);
  if (labeled) layout.label = find_column(header, task.label_column, file, task.name);
  return layout;
}

std::string quoted(std::string_view s) {
  constexpr size_t kMax = 60;
  // Appends rather than operator+ on temporaries: GCC 12 warns (-Wstringop-overflow) on those.
  std::string out(1, '\'');
  out.append(s.substr(0, kMax));
  out.append(s.size() > kMax ? "...'" : "'");
  return out;
}

}  // namespace

GlueSplit read_glue_tsv(const GlueTask& task, const std::string& path, const std::string& split) {
  const TsvFile file = TsvFile::read(path);
  const bool labeled = task.split_has_labels(split);
  // CoLA's labeled files are the raw in_domain/out_of_domain files, without a header line.
  const bool headerless = labeled && !task.headerless_columns.empty();
  const auto& lines = file.lines();
  if (lines.empty() || (lines.size() == 1 && lines[0].empty()))
    throw ArgumentError(file.where(1) + ": the file is empty; expected " +
                        (headerless ? std::string("rows of ") +
                                          std::to_string(task.headerless_columns.size()) +
                                          " tab-separated columns"
                                    : std::string("a header line and rows")) +
                        " of GLUE task " + task.name);

  std::vector<std::string> header;
  if (headerless) {
    header = task.headerless_columns;
  } else {
    for (auto field : split_tsv_line(lines[0])) header.emplace_back(field);
  }
  const ColumnLayout layout = resolve_layout(task, header, file, labeled);

  GlueSplit out;
  out.task = task.name;
  out.split = split;
  out.source = path;
  out.has_labels = labeled;
  out.is_regression = task.is_regression();
  out.examples.reserve(lines.size());
  const size_t first_row = headerless ? 0 : 1;
  for (size_t i = first_row; i < lines.size(); ++i) {
    const int64_t line_number = static_cast<int64_t>(i) + 1;
    const std::string_view line = lines[i];
    if (line.empty()) {
      throw ArgumentError(file.where(line_number) + ": empty line; expected " +
                          std::to_string(layout.num_columns) + " tab-separated columns");
    }
    const auto fields = split_tsv_line(line);
    if (fields.size() != layout.num_columns) {
      throw ArgumentError(file.where(line_number) + ": expected " +
                          std::to_string(layout.num_columns) + " tab-separated columns (" +
                          join(header) + "), found " + std::to_string(fields.size()));
    }
    GlueExample ex;
    ex.idx = static_cast<int64_t>(out.examples.size());
    ex.line = line_number;
    ex.text_a = std::string(fields[layout.text_a]);
    if (layout.text_b) ex.text_b = std::string(fields[*layout.text_b]);
    if (layout.label) {
      const std::string_view value = fields[*layout.label];
      if (task.is_regression()) {
        float score = 0;
        const char* end = value.data() + value.size();
        auto [ptr, ec] = std::from_chars(value.data(), end, score);
        if (ec != std::errc() || ptr != end || !std::isfinite(score))
          throw ArgumentError(file.where(line_number) + ": the " + task.label_column + " " +
                              quoted(value) + " is not a finite number (GLUE task " + task.name +
                              " is a regression task)");
        ex.score = score;
      } else {
        auto it = std::find(task.label_values.begin(), task.label_values.end(), value);
        if (it == task.label_values.end())
          throw ArgumentError(file.where(line_number) + ": the " + task.label_column + " " +
                              quoted(value) + " is not a label of GLUE task " + task.name +
                              " (expected one of " + join(task.label_values) + ")");
        ex.label = static_cast<int64_t>(it - task.label_values.begin());
      }
    }
    out.examples.push_back(std::move(ex));
  }
  return out;
}

std::string glue_split_path(const std::string& task_dir, const std::string& split) {
  return (std::filesystem::path(task_dir) / (split + ".tsv")).string();
}

GlueSplit read_glue_split(const GlueTask& task, const std::string& task_dir,
                          const std::string& split) {
  return read_glue_tsv(task, glue_split_path(task_dir, split), split);
}

}  // namespace ctrainer::glue
