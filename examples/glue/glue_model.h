#pragma once
// The model and tokenizer of a run_glue run, through the registries (AutoConfig, AutoModel for
// sequence classification, AutoTokenizer): a pretrained folder (config.json, model.safetensors,
// tokenizer files) or a new model from --config_name + --tokenizer_name; and saving them back in
// the same layout so that the output folder is a valid --model_name_or_path.
#include <memory>
#include <string>
#include <vector>

#include <ctrainer/examples/glue/glue_task.h>
#include <ctrainer/models/model.h>
#include <ctrainer/models/model_config.h>
#include <ctrainer/models/tokenizers/tokenizer.h>
#include <ctrainer/trainer/trainer.h>

#include "glue_arguments.h"

namespace run_glue {

struct ModelBundle {
  std::shared_ptr<ctrainer::Model> model;
  /// The model's config (num_labels and label names set from the task).
  std::shared_ptr<const ctrainer::ModelConfig> config;
  std::shared_ptr<ctrainer::Tokenizer> tokenizer;
  /// Class id of the model for each class id of the task's labels (HF run_glue's label_to_id:
  /// a model trained with named labels in another order keeps its order). Identity when empty.
  std::vector<int64_t> task_to_model_label;
};

/// Builds the tokenizer and the model for `task` (num_labels, id2label set from the task).
/// Throws ctrainer::ArgumentError naming the file and the fix for missing or invalid inputs.
ModelBundle load_model_and_tokenizer(const ModelArguments& model_args,
                                     const ctrainer::glue::GlueTask& task);

/// HF trainer.save_model() + tokenizer.save_pretrained(): config.json, model.safetensors and
/// the tokenizer's files (vocab.txt, tokenizer_config.json for WordPiece) in `dir`.
void save_final_model(ctrainer::Trainer& trainer, const ModelBundle& bundle,
                      const std::string& dir);

}  // namespace run_glue
