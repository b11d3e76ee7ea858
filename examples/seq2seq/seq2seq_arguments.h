#pragma once
// The flags of run_summarization and run_translation: HF's DataTrainingArguments and
// ModelArguments of examples/pytorch/summarization and translation, next to every
// Seq2SeqTrainingArguments flag.
#include <cstdint>
#include <optional>
#include <string>

#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/seq2seq_training_args.h>

namespace run_seq2seq {

/// Which of HF's two scripts: their data flags and metrics differ.
enum class Task { kSummarization, kTranslation };

/// Where the pairs come from and how they become model inputs (HF DataTrainingArguments).
struct DataArguments {
  std::string dataset_name;  ///< a hub dataset: refused (no hub is reachable)
  std::string dataset_config_name;
  /// .csv or .json/.jsonl files (run_translation: .json/.jsonl of {"translation": {...}}).
  std::string train_file, validation_file, test_file;
  // Summarization's columns; unset: the file's first and second columns.
  std::string text_column, summary_column;
  // Translation's languages, keys of each record's "translation" object.
  std::string source_lang, target_lang;
  /// Prepended to every source (T5's "summarize: " or "translate English to German: ").
  std::string source_prefix;
  int64_t max_source_length = 1024;
  /// Summarization's default; translation's is 128 too.
  int64_t max_target_length = 128;
  /// Targets of the validation and test sets, and generation_max_length unless given; unset:
  /// max_target_length.
  std::optional<int64_t> val_max_target_length;
  /// Pad every example to the maximal lengths instead of each batch to its longest.
  bool pad_to_max_length = false;
  std::optional<int64_t> max_train_samples, max_eval_samples, max_predict_samples;
  /// generation_num_beams unless given.
  std::optional<int64_t> num_beams;
  /// Labels padded with -100 (ignored by the loss) instead of the pad token.
  bool ignore_pad_token_for_loss = true;
  /// mBART-style multilingual models: the token forced first in the generation.
  std::string forced_bos_token;
  /// HF's dataset cache flags: there is no cache here (files are tokenized on each run).
  bool overwrite_cache = false;

  int64_t eval_target_length() const { return val_max_target_length.value_or(max_target_length); }
};

/// Which model and tokenizer (HF ModelArguments).
struct ModelArguments {
  /// A model folder (config.json, safetensors weights, tokenizer files).
  std::string model_name_or_path;
  /// config.json (or a folder holding one): without --model_name_or_path the model starts from
  /// it with new weights (ctrainer's: no hub to download a pretrained one from).
  std::string config_name;
  std::string tokenizer_name;
};

struct Seq2SeqArguments {
  Task task = Task::kSummarization;
  DataArguments data;
  ModelArguments model;

  void register_flags(ctrainer::ArgumentParser& parser);
  /// Throws ctrainer::ArgumentError naming the flag and the fix.
  void validate(const ctrainer::Seq2SeqTrainingArguments& args) const;
};

}  // namespace run_seq2seq
