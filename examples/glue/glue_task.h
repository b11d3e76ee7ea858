#pragma once
/// \file The nine GLUE tasks: where their files are, which columns hold the texts and the label,
/// and how labels map to ids (the order of HF datasets' `glue` ClassLabel names, which run_glue
/// uses).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ctrainer::glue {

/// One GLUE task as its original TSV files lay it out.
struct GlueTask {
  /// HF run_glue's task name: cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli.
  std::string name;
  /// The folder of the original GLUE download (CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE,
  /// WNLI).
  std::string folder;
  /// Header names of the first text column and of the optional second (pair) column.
  std::string text_a_column;
  std::optional<std::string> text_b_column;
  /// Header name of the label column of labeled splits.
  std::string label_column;
  /// Label values as they are written in the files; a value's position is its class id.
  /// Empty for the regression task (stsb), whose label is a float score.
  std::vector<std::string> label_values;
  /// HF datasets' names of the classes, by id (e.g. {"negative", "positive"}).
  std::vector<std::string> label_names;
  /// Column names of the labeled splits when their files have no header line (CoLA train/dev);
  /// empty when the first line is a header.
  std::vector<std::string> headerless_columns;
  /// Splits with labels (file <split>.tsv) used for evaluation: {"dev"}, or MNLI's
  /// {"dev_matched", "dev_mismatched"}.
  std::vector<std::string> eval_splits;
  /// Splits without labels: {"test"}, or MNLI's {"test_matched", "test_mismatched"}.
  std::vector<std::string> test_splits;

  bool is_regression() const { return label_values.empty(); }
  /// Number of model outputs: the class count, or 1 for regression (HF's num_labels).
  int64_t num_labels() const {
    return is_regression() ? 1 : static_cast<int64_t>(label_values.size());
  }
  /// Whether `split` ("train", "dev", "test", "dev_matched", ...) carries labels: every split
  /// except the test splits.
  bool split_has_labels(std::string_view split) const;
};

/// All nine tasks, in GLUE's order.
const std::vector<GlueTask>& glue_tasks();
/// The task called `name` (case-insensitive); throws ArgumentError listing the task names.
const GlueTask& glue_task(std::string_view name);

}  // namespace ctrainer::glue
