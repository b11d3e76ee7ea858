#include "glue_data.h"

#include <filesystem>
#include <optional>

#include <ctrainer/core/errors.h>
#include <ctrainer/examples/glue/glue_dataset.h>
#include <ctrainer/examples/glue/glue_reader.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace run_glue {
namespace {
namespace fs = std::filesystem;
using ctrainer::TokenizedData;
using ctrainer::TokenizedDataset;

/// The first `n` examples (HF's dataset.select(range(n))).
std::shared_ptr<TokenizedDataset> take_first(const std::shared_ptr<TokenizedDataset>& dataset,
                                             std::optional<int64_t> n) {
  if (!n || *n >= dataset->size()) return dataset;
  return std::make_shared<TokenizedDataset>(dataset->head(*n));
}

/// Class ids in the model's label order (run_glue's label_to_id).
std::shared_ptr<TokenizedDataset> to_model_labels(std::shared_ptr<TokenizedDataset> dataset,
                                                  const std::vector<int64_t>& mapping) {
  if (mapping.empty() || dataset->label_kind() != ctrainer::LabelKind::kClass) return dataset;
  TokenizedData data = dataset->data();
  for (auto& label : data.labels) label = mapping.at(static_cast<size_t>(label));
  return std::make_shared<TokenizedDataset>(std::move(data));
}

class SplitLoader {
 public:
  SplitLoader(const DataArguments& data_args, const ctrainer::glue::GlueTask& task,
              const ModelBundle& bundle)
      : data_args_(data_args), task_(task), bundle_(bundle) {
    options_.max_seq_length = data_args.max_seq_length;
    options_.pad_to_max_length = data_args.pad_to_max_length;
    cache_dir_ = data_args.resolved_cache_dir();
  }

  /// Split `split` from `explicit_file`, or from --data_dir when that is empty.
  std::shared_ptr<TokenizedDataset> load(const std::string& split, const std::string& explicit_file,
                                         std::optional<int64_t> max_samples) const {
    const std::string path = explicit_file.empty()
                                 ? ctrainer::glue::glue_split_path(data_args_.data_dir, split)
                                 : explicit_file;
    // --overwrite_cache tokenizes again and refreshes the cache file for the next run.
    const ctrainer::glue::GlueDataset loaded = ctrainer::glue::load_glue_dataset_file(
        task_, path, split, *bundle_.tokenizer, options_, cache_dir_, data_args_.overwrite_cache);
    ctrainer::logging::logger()->info("{} split: {} examples from {}{}", split,
                                      loaded.dataset->size(), path,
                                      loaded.from_cache ? " (tokenized cache)" : "");
    return to_model_labels(take_first(loaded.dataset, max_samples), bundle_.task_to_model_label);
  }

  bool exists(const std::string& split) const {
    return !data_args_.data_dir.empty() &&
           fs::is_regular_file(ctrainer::glue::glue_split_path(data_args_.data_dir, split));
  }

 private:
  const DataArguments& data_args_;
  const ctrainer::glue::GlueTask& task_;
  const ModelBundle& bundle_;
  ctrainer::glue::TokenizeOptions options_;
  std::string cache_dir_;
};

}  // namespace

GlueDatasets load_glue_datasets(const DataArguments& data_args,
                                const ctrainer::TrainingArguments& args,
                                const ctrainer::glue::GlueTask& task, const ModelBundle& bundle) {
  const SplitLoader loader(data_args, task, bundle);
  GlueDatasets out;
  if (args.do_train)
    out.train = loader.load("train", data_args.train_file, data_args.max_train_samples);
  // MNLI evaluates and predicts on the matched and the mismatched splits (run_glue's "mnli-mm").
  const bool mnli = task.name == "mnli";
  if (args.do_eval) {
    out.eval.push_back({task.name, "",
                        loader.load(task.eval_splits.front(), data_args.validation_file,
                                    data_args.max_eval_samples)});
    if (mnli && loader.exists(task.eval_splits.back()))
      out.eval.push_back(
          {"mnli-mm", "_mm", loader.load(task.eval_splits.back(), "", data_args.max_eval_samples)});
  }
  if (args.do_predict) {
    out.test.push_back({task.name, "",
                        loader.load(task.test_splits.front(), data_args.test_file,
                                    data_args.max_predict_samples)});
    if (mnli && loader.exists(task.test_splits.back()))
      out.test.push_back({"mnli-mm", "_mm",
                          loader.load(task.test_splits.back(), "", data_args.max_predict_samples)});
  }
  return out;
}

}  // namespace run_glue
