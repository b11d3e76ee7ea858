#pragma once
// The tokenized train / evaluation / prediction splits of a run_glue run.
#include <memory>
#include <string>
#include <vector>

#include <ctrainer/examples/glue/glue_task.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/data/text/tokenized_dataset.h>

#include "glue_arguments.h"
#include "glue_model.h"

namespace run_glue {

/// One evaluation or prediction split.
struct NamedSplit {
  /// The task name used in file names (predict_results_<name>.txt): the task, or "mnli-mm".
  std::string name;
  /// Appended to the metric keys in eval_results.json: "" or "_mm" (MNLI mismatched).
  std::string metric_suffix;
  std::shared_ptr<ctrainer::TokenizedDataset> dataset;
};

struct GlueDatasets {
  std::shared_ptr<ctrainer::TokenizedDataset> train;  ///< set with --do_train
  std::vector<NamedSplit> eval;                       ///< with --do_eval (MNLI: matched, mm)
  std::vector<NamedSplit> test;                       ///< with --do_predict (MNLI: matched, mm)
};

/// Reads and tokenizes (or loads from the cache) the splits the do_* flags need, keeps the
/// first max_*_samples of each, and maps class ids to the model's label order.
GlueDatasets load_glue_datasets(const DataArguments& data_args,
                                const ctrainer::TrainingArguments& args,
                                const ctrainer::glue::GlueTask& task, const ModelBundle& bundle);

}  // namespace run_glue
