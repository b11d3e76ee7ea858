// A GLUE TSV file on arbitrary bytes: the first line is "<task> <split>" (a task name of
// glue_tasks(), a split such as train, dev, dev_matched or test), the rest the file, read by
// read_glue_tsv (run_glue's reader). Bad input throws ArgumentError naming path:line.
#include <ctrainer/core/errors.h>
#include <ctrainer/examples/glue/glue_reader.h>
#include <ctrainer/examples/glue/glue_task.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const std::string_view bytes = ctrainer::fuzz::bytes_of(data, size);
  const size_t newline = bytes.find('\n');
  if (newline == std::string_view::npos) return 0;
  const std::string_view first = bytes.substr(0, newline);
  const size_t space = first.find(' ');
  const std::string task_name(first.substr(0, space));
  const std::string split(space == std::string_view::npos ? "train" : first.substr(space + 1));
  const auto& tasks = ctrainer::glue::glue_tasks();
  const ctrainer::glue::GlueTask* task = &tasks[task_name.size() % tasks.size()];
  try {
    task = &ctrainer::glue::glue_task(task_name);
  } catch (const ctrainer::ArgumentError&) {
  }
  const auto path = ctrainer::fuzz::scratch_file("data.tsv", bytes.substr(newline + 1));
  try {
    const ctrainer::glue::GlueSplit read =
        ctrainer::glue::read_glue_tsv(*task, path.string(), split);
    for (const auto& example : read.examples) {
      if (read.has_labels && !read.is_regression && !example.label) std::abort();
      if (read.has_labels && read.is_regression && !example.score) std::abort();
      if (task->text_b_column.has_value() != example.text_b.has_value()) std::abort();
    }
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
