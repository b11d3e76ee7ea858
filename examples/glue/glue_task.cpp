#include <ctrainer/examples/glue/glue_task.h>

#include <algorithm>
#include <cctype>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>

namespace ctrainer::glue {
namespace {

std::vector<GlueTask> make_tasks() {
  const std::vector<std::string> dev{"dev"}, test{"test"};
  const std::vector<std::string> binary{"0", "1"};
  // Columns are the headers of the original GLUE TSVs (download_glue_data.py). Label ids follow
  // HF datasets' glue features: MNLI entailment/neutral/contradiction = 0/1/2, QNLI and RTE
  // entailment/not_entailment = 0/1, the 0/1 tasks keep their value.
  return {
      {.name = "cola",
       .folder = "CoLA",
       .text_a_column = "sentence",
       .label_column = "label",
       .label_values = binary,
       .label_names = {"unacceptable", "acceptable"},
       .headerless_columns = {"source", "label", "original_label", "sentence"},
       .eval_splits = dev,
       .test_splits = test},
      {.name = "sst2",
       .folder = "SST-2",
       .text_a_column = "sentence",
       .label_column = "label",
       .label_values = binary,
       .label_names = {"negative", "positive"},
       .eval_splits = dev,
       .test_splits = test},
      {.name = "mrpc",
       .folder = "MRPC",
       .text_a_column = "#1 String",
       .text_b_column = "#2 String",
       .label_column = "Quality",
       .label_values = binary,
       .label_names = {"not_equivalent", "equivalent"},
       .eval_splits = dev,
       .test_splits = test},
      {.name = "stsb",
       .folder = "STS-B",
       .text_a_column = "sentence1",
       .text_b_column = "sentence2",
       .label_column = "score",
       .eval_splits = dev,
       .test_splits = test},
      {.name = "qqp",
       .folder = "QQP",
       .text_a_column = "question1",
       .text_b_column = "question2",
       .label_column = "is_duplicate",
       .label_values = binary,
       .label_names = {"not_duplicate", "duplicate"},
       .eval_splits = dev,
       .test_splits = test},
      {.name = "mnli",
       .folder = "MNLI",
       .text_a_column = "sentence1",
       .text_b_column = "sentence2",
       .label_column = "gold_label",
       .label_values = {"entailment", "neutral", "contradiction"},
       .label_names = {"entailment", "neutral", "contradiction"},
       .eval_splits = {"dev_matched", "dev_mismatched"},
       .test_splits = {"test_matched", "test_mismatched"}},
      {.name = "qnli",
       .folder = "QNLI",
       .text_a_column = "question",
       .text_b_column = "sentence",
       .label_column = "label",
       .label_values = {"entailment", "not_entailment"},
       .label_names = {"entailment", "not_entailment"},
       .eval_splits = dev,
       .test_splits = test},
      {.name = "rte",
       .folder = "RTE",
       .text_a_column = "sentence1",
       .text_b_column = "sentence2",
       .label_column = "label",
       .label_values = {"entailment", "not_entailment"},
       .label_names = {"entailment", "not_entailment"},
       .eval_splits = dev,
       .test_splits = test},
      {.name = "wnli",
       .folder = "WNLI",
       .text_a_column = "sentence1",
       .text_b_column = "sentence2",
       .label_column = "label",
       .label_values = binary,
       .label_names = {"not_entailment", "entailment"},
       .eval_splits = dev,
       .test_splits = test},
  };
}

}  // namespace

bool GlueTask::split_has_labels(std::string_view split) const {
  return std::find(test_splits.begin(), test_splits.end(), split) == test_splits.end();
}

const std::vector<GlueTask>& glue_tasks() {
  static const std::vector<GlueTask> tasks = make_tasks();
  return tasks;
}

const GlueTask& glue_task(std::string_view name) {
  const std::string wanted = lower(name);
  std::string names;
  for (const GlueTask& task : glue_tasks()) {
    if (task.name == wanted) return task;
    names += (names.empty() ? "" : ", ") + task.name;
  }
  throw ArgumentError("unknown GLUE task '" + std::string(name) + "'; choose one of " + names);
}

}  // namespace ctrainer::glue
