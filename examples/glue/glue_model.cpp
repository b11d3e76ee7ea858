#include "glue_model.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/core/strings.h>
#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/tokenizers/tokenizer_registry.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace run_glue {
namespace {
namespace fs = std::filesystem;
using ctrainer::ArgumentError;

/// `path` itself when it is a file, else `path`/`file_name`; ArgumentError when absent.
std::string file_in(const std::string& path, const std::string& file_name, const char* flag) {
  const fs::path p(path);
  const fs::path candidate = fs::is_directory(p) ? p / file_name : p;
  if (!fs::is_regular_file(candidate))
    throw ArgumentError(
        std::string("--") + flag + ": " + candidate.string() + " does not exist (expected " +
        (file_name == std::string("vocab.txt") ? "tokenizer.json, vocab.txt" : file_name) +
        " or a folder holding one)");
  return candidate.string();
}

/// run_glue's label_to_id: when the model's config names its labels (not LABEL_i) and the names
/// are the task's (ignoring case), dataset class i maps to the model's id of that name.
std::vector<int64_t> model_label_order(const ctrainer::ModelConfig& config,
                                       const ctrainer::glue::GlueTask& task) {
  if (task.is_regression() || config.num_labels() != task.num_labels()) return {};
  const std::vector<std::string> id2label = config.id2label();
  bool generic = true;
  for (size_t i = 0; i < id2label.size(); ++i)
    generic = generic && id2label[i] == "LABEL_" + std::to_string(i);
  if (generic) return {};
  std::vector<int64_t> mapping;
  for (const auto& name : task.label_names) {
    auto it = std::find_if(id2label.begin(), id2label.end(),
                           [&](const std::string& l) { return ctrainer::lower(l) == name; });
    if (it == id2label.end()) {
      ctrainer::logging::logger()->warn(
          "Your model seems to have been trained with labels, but they don't match the dataset: "
          "model labels: {}, dataset labels: {}. Ignoring the model labels as a result.",
          nlohmann::json(id2label).dump(), nlohmann::json(task.label_names).dump());
      return {};
    }
    mapping.push_back(static_cast<int64_t>(it - id2label.begin()));
  }
  return mapping;
}

}  // namespace

ModelBundle load_model_and_tokenizer(const ModelArguments& model_args,
                                     const ctrainer::glue::GlueTask& task) {
  ModelBundle bundle;
  const std::string& model_dir = model_args.model_name_or_path;
  // A folder goes to AutoTokenizer whole (tokenizer.json, else vocab.txt + tokenizer_config.json).
  const std::string& tokenizer_source =
      model_args.tokenizer_name.empty() ? model_dir : model_args.tokenizer_name;
  const char* tokenizer_flag =
      model_args.tokenizer_name.empty() ? "model_name_or_path" : "tokenizer_name";
  const std::string vocab_path =
      fs::is_directory(tokenizer_source) &&
              (fs::is_regular_file(fs::path(tokenizer_source) / "tokenizer.json") ||
               fs::is_regular_file(fs::path(tokenizer_source) / "vocab.txt"))
          ? tokenizer_source
          : file_in(tokenizer_source, "vocab.txt", tokenizer_flag);
  ctrainer::AutoTokenizerOptions tokenizer_options;
  if (const std::string value = ctrainer::lower(model_args.do_lower_case); value != "auto")
    tokenizer_options.do_lower_case = value == "true";
  bundle.tokenizer = ctrainer::AutoTokenizer::from_pretrained(vocab_path, tokenizer_options);

  const std::string config_path =
      model_args.config_name.empty()
          ? file_in(model_dir, "config.json", "model_name_or_path")
          : file_in(model_args.config_name, "config.json", "config_name");
  std::unique_ptr<ctrainer::ModelConfig> config =
      ctrainer::AutoConfig::from_pretrained(config_path);
  bundle.task_to_model_label = model_label_order(*config, task);
  if (bundle.task_to_model_label.empty()) {
    // HF: num_labels from the task, label names from the dataset (LABEL_0 for regression).
    config->set_num_labels(task.num_labels());
    if (!task.is_regression()) config->set_label_names(task.label_names);
  }
  config->set_extra("finetuning_task", task.name);
  if (config->vocab_size() < bundle.tokenizer->vocab_size())
    throw ArgumentError(config_path + ": vocab_size " + std::to_string(config->vocab_size()) +
                        " is smaller than the vocabulary " + vocab_path + " (" +
                        std::to_string(bundle.tokenizer->vocab_size()) +
                        " tokens); use a config whose vocab_size covers it");
  config->validate(config_path);

  constexpr auto kTask = ctrainer::ModelTask::kSequenceClassification;
  if (!model_dir.empty()) {
    bundle.model = ctrainer::AutoModel::from_pretrained(model_dir, *config, kTask,
                                                        model_args.ignore_mismatched_sizes);
  } else {
    bundle.model = ctrainer::AutoModel::from_config(*config, kTask);
    ctrainer::logging::logger()->info("Training a new model from scratch with {} ({} parameters)",
                                      config_path, bundle.model->num_parameters());
  }
  if (model_args.full_last_layer) {
    // The one model with the [CLS]-only shortcut; every other model computes every row already.
    if (auto* bert = dynamic_cast<ctrainer::BertForSequenceClassification*>(bundle.model.get())) {
      bert->set_full_last_layer(true);
      ctrainer::logging::logger()->info(
          "--full_last_layer: the last encoder layer computes every position, as transformers "
          "does (its FLOPs), not only the [CLS] row the classifier reads");
    }
  }
  bundle.config = std::move(config);
  return bundle;
}

void save_final_model(ctrainer::Trainer& trainer, const ModelBundle& bundle,
                      const std::string& dir) {
  trainer.save_model(dir);
  if (!trainer.process().is_world_process_zero()) return;
  bundle.tokenizer->save_pretrained(dir);
}

}  // namespace run_glue
