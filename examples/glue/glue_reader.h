#pragma once
/// \file Reading the original GLUE TSV files of a task into examples (texts + label).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/examples/glue/glue_task.h>

namespace ctrainer::glue {

/// One row of a GLUE file.
struct GlueExample {
  std::string text_a;
  /// The second text of pair tasks.
  std::optional<std::string> text_b;
  /// Class id (classification tasks, labeled splits).
  std::optional<int64_t> label;
  /// Regression target (stsb, labeled splits).
  std::optional<float> score;
  /// 0-based row number within the split (HF datasets' `idx`, run_glue's prediction index).
  int64_t idx = 0;
  /// 1-based line of the source file, for error messages.
  int64_t line = 0;
};

/// The examples of one split of one task.
struct GlueSplit {
  std::string task;    ///< GlueTask::name
  std::string split;   ///< "train", "dev", "dev_matched", "test", ...
  std::string source;  ///< the file it was read from
  bool has_labels = false;
  bool is_regression = false;
  std::vector<GlueExample> examples;

  int64_t size() const { return static_cast<int64_t>(examples.size()); }
};

/// Reads `path` as split `split` of `task`. Fields are split on tabs with no quote handling, a
/// UTF-8 BOM is dropped, columns are found by header name (CoLA's train/dev have no header and
/// use GlueTask::headerless_columns). Throws ArgumentError naming `path:line` and the problem
/// for: an empty file, a header lacking a needed column, a row with a different number of
/// columns than the header, an empty line, a label outside the task's label values, a score
/// that is not a finite number.
GlueSplit read_glue_tsv(const GlueTask& task, const std::string& path, const std::string& split);

/// The file of `split` under `task_dir` (the task's folder of the GLUE download, e.g.
/// glue_data/MNLI): `<task_dir>/<split>.tsv`.
std::string glue_split_path(const std::string& task_dir, const std::string& split);

/// read_glue_tsv(task, glue_split_path(task_dir, split), split).
GlueSplit read_glue_split(const GlueTask& task, const std::string& task_dir,
                          const std::string& split);

}  // namespace ctrainer::glue
