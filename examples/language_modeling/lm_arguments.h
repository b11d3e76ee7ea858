#pragma once
// The flags of run_clm (and run_mlm): HF's language-modeling DataTrainingArguments and
// ModelArguments, next to every TrainingArguments flag.
#include <cstdint>
#include <optional>
#include <string>

#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/peft/lora_arguments.h>

namespace run_lm {

/// Where the text comes from and how it becomes blocks (HF DataTrainingArguments).
struct DataArguments {
  /// A hub dataset: refused (no hub is reachable from ctrainer's programs).
  std::string dataset_name;
  /// .txt (one example per line), .json or .jsonl (JSON lines, or one array, of objects whose
  /// "text" field, else first field, is the example).
  std::string train_file;
  std::string validation_file;
  std::optional<int64_t> max_train_samples;
  std::optional<int64_t> max_eval_samples;
  /// Tokens per training block; unset: the tokenizer's model_max_length, capped at 1024 and the
  /// model's positions.
  std::optional<int64_t> block_size;
  /// Without --validation_file, this percentage of the train file's first examples evaluates.
  int64_t validation_split_percentage = 5;
  /// .txt files: keep each line's line break in its text (run_clm; run_mlm reads lines
  /// without, as datasets' text loader does by default).
  bool keep_linebreaks = true;

  // run_mlm's own:
  /// Tokens per example; unset: the tokenizer's model_max_length, at most 1024.
  std::optional<int64_t> max_seq_length;
  double mlm_probability = 0.15;
  /// Each non-blank line is one example (truncated to max_seq_length) instead of blocks of
  /// the concatenated texts.
  bool line_by_line = false;
  /// With line_by_line: pad every example to max_seq_length instead of each batch to its longest.
  bool pad_to_max_length = false;
  /// ctrainer's: mask whole words (DataCollatorForLanguageModeling's whole_word_mask).
  bool whole_word_mask = false;
};

/// Which model, config and tokenizer (HF ModelArguments).
struct ModelArguments {
  std::string model_name_or_path;
  /// From scratch: the model_type whose default config starts the model (gpt2, llama, ...).
  std::string model_type;
  /// From scratch: "n_embd=10,resid_pdrop=0.2" applied to the model_type's default config.
  std::string config_overrides;
  std::string config_name;
  std::string tokenizer_name;
};

struct LmArguments {
  /// run_mlm (masked LM flags) or run_clm (causal LM flags).
  bool masked = false;
  DataArguments data;
  ModelArguments model;
  /// --lora_r and the other PEFT LoRA flags.
  ctrainer::LoraArguments lora;

  void register_flags(ctrainer::ArgumentParser& parser);
  /// Throws ctrainer::ArgumentError naming the flag and the fix.
  void validate(const ctrainer::TrainingArguments& args) const;
};

}  // namespace run_lm
