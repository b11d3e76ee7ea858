#pragma once
// run_glue's own flags: HF run_glue.py's DataTrainingArguments and ModelArguments, next to every
// TrainingArguments flag.
#include <cstdint>
#include <optional>
#include <string>

#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/peft/lora_arguments.h>

namespace run_glue {

/// Where the data comes from and how it is preprocessed (HF DataTrainingArguments).
struct DataArguments {
  std::string task_name;
  /// A GLUE task folder (train.tsv, dev.tsv, test.tsv; MNLI: dev_matched.tsv, ...).
  std::string data_dir;
  std::string train_file;
  std::string validation_file;
  std::string test_file;
  int64_t max_seq_length = 128;
  /// HF's default is to pad every example to max_seq_length.
  bool pad_to_max_length = true;
  std::optional<int64_t> max_train_samples;
  std::optional<int64_t> max_eval_samples;
  std::optional<int64_t> max_predict_samples;
  bool overwrite_cache = false;
  /// Folder of the tokenized-dataset cache; empty = $XDG_CACHE_HOME/ctrainer/datasets (or
  /// ~/.cache/ctrainer/datasets), like HF datasets' ~/.cache/huggingface/datasets.
  std::string cache_dir;

  /// cache_dir, or the default above.
  std::string resolved_cache_dir() const;
};

/// Which model, config and vocabulary to use (HF ModelArguments).
struct ModelArguments {
  /// A folder with config.json + model.safetensors + vocab.txt; empty = train from scratch.
  std::string model_name_or_path;
  /// config.json, or a folder holding one (default: the model folder's).
  std::string config_name;
  /// vocab.txt, or a folder holding one (default: the model folder's).
  std::string tokenizer_name;
  /// "auto" (tokenizer_config.json, else true), "true" or "false".
  std::string do_lower_case = "auto";
  /// Re-initialise checkpoint weights whose shape differs (e.g. a head with another number of
  /// labels) instead of failing.
  bool ignore_mismatched_sizes = false;
  /// ctrainer's: compute every position in the last encoder layer, as transformers does, instead
  /// of only the rows the classification head reads (equal FLOPs for comparisons).
  bool full_last_layer = false;
};

struct GlueArguments {
  DataArguments data;
  ModelArguments model;
  /// --plot (ctrainer's): output_dir/training_curves.svg when the run ends (ctrainer-plot's).
  bool plot = false;
  /// --lora_r and the other PEFT LoRA flags.
  ctrainer::LoraArguments lora;

  /// Adds the flags above to `parser`.
  void register_flags(ctrainer::ArgumentParser& parser);
  /// Checks the combination (a task, where its data is, a model or a config + vocabulary, the
  /// do_* flags). Throws ctrainer::ArgumentError naming the flag and the fix.
  void validate(const ctrainer::TrainingArguments& args) const;
  /// On SageMaker, the input channels are the data when neither --data_dir nor the split's
  /// file flag is given: SM_CHANNEL_TRAIN (train.tsv, or the channel's only file) for
  /// --train_file, SM_CHANNEL_EVAL (dev.tsv / dev_matched.tsv) for --validation_file,
  /// SM_CHANNEL_TEST (test.tsv / test_matched.tsv) for --test_file.
  void apply_sagemaker_channels(const ctrainer::EnvironmentMap& environment);
};

}  // namespace run_glue
