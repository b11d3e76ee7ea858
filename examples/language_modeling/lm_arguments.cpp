#include "lm_arguments.h"

#include <filesystem>

#include <fmt/format.h>

#include <ctrainer/core/errors.h>

namespace run_lm {
namespace fs = std::filesystem;
using ctrainer::ArgumentError;

namespace {

bool known_extension(const std::string& file) {
  const std::string ext = fs::path(file).extension().string();
  return ext == ".txt" || ext == ".json" || ext == ".jsonl";
}

}  // namespace

void LmArguments::register_flags(ctrainer::ArgumentParser& parser) {
  parser.add_option("dataset_name", &data.dataset_name,
                    "A dataset of the Hugging Face hub: not supported (no hub); use --train_file.");
  parser.add_option("train_file", &data.train_file,
                    "The training data: a .txt file (one example per line) or a .json/.jsonl "
                    "file of objects whose \"text\" field (else first field) is the example.");
  parser.add_option("validation_file", &data.validation_file,
                    "The evaluation data, in the same formats as --train_file.");
  parser.add_option("max_train_samples", &data.max_train_samples,
                    "Keep only the first N training blocks (debugging, quick runs).");
  parser.add_option("max_eval_samples", &data.max_eval_samples,
                    "Keep only the first N evaluation blocks.");
  if (masked) {
    parser.add_option("max_seq_length", &data.max_seq_length,
                      "Tokens per example: the texts are tokenized, concatenated and cut into "
                      "examples of this size, or with --line_by_line truncated to it (default: "
                      "the tokenizer's model_max_length, at most 1024).");
    parser.add_option("mlm_probability", &data.mlm_probability,
                      "Ratio of tokens to mask for the masked language modeling loss.");
    parser.add_option("line_by_line", &data.line_by_line,
                      "Whether distinct lines of text in the dataset are to be handled as "
                      "distinct sequences (blank lines are dropped).");
    parser.add_option("pad_to_max_length", &data.pad_to_max_length,
                      "With --line_by_line: pad every example to max_seq_length instead of each "
                      "batch to its longest example.");
    parser.add_option("whole_word_mask", &data.whole_word_mask,
                      "ctrainer's: mask whole words (every token of a chosen word, always with the "
                      "mask token), as DataCollatorForLanguageModeling(whole_word_mask=True). "
                      "Needs a tokenizer.json tokenizer, whose offsets tell the words apart.");
  } else {
    parser.add_option("block_size", &data.block_size,
                      "Tokens per block: the texts are tokenized, concatenated and cut into "
                      "blocks of this size (default: the tokenizer's model_max_length, at most "
                      "1024 and the model's positions).");
    parser.add_option("keep_linebreaks", &data.keep_linebreaks,
                      "For .txt files: keep each line's line break in its text.");
  }
  parser.add_option("validation_split_percentage", &data.validation_split_percentage,
                    "Without --validation_file: the percentage of the train file's first "
                    "examples used for evaluation (the rest trains).");
  parser.add_option(
      "model_name_or_path", &model.model_name_or_path,
      "Folder of a pretrained model (config.json, safetensors weights, tokenizer "
      "files). Leave empty to train from scratch with --model_type or --config_name.");
  parser.add_option("model_type", &model.model_type,
                    "From scratch: the model type whose default config starts the model (run_clm: "
                    "gpt2, llama; run_mlm: bert).");
  parser.add_option("config_overrides", &model.config_overrides,
                    "From scratch: comma-separated key=value settings applied to --model_type's "
                    "default config, e.g. n_embd=256,n_layer=4,vocab_size=8192.");
  parser.add_option("config_name", &model.config_name,
                    "config.json (or a folder holding one) if not the model's.");
  parser.add_option("tokenizer_name", &model.tokenizer_name,
                    "Tokenizer folder (tokenizer.json, vocab.json + merges.txt, vocab.txt, ...) if "
                    "not the model's.");
  lora.register_flags(parser);
}

void LmArguments::validate(const ctrainer::TrainingArguments& args) const {
  if (!data.dataset_name.empty())
    throw ArgumentError("--dataset_name " + data.dataset_name +
                        ": datasets of the Hugging Face hub are not supported (no hub is "
                        "reachable); download it and pass --train_file / --validation_file");
  if (data.train_file.empty() && data.validation_file.empty())
    throw ArgumentError(
        "give --train_file (and optionally --validation_file): a .txt, .json or "
        ".jsonl file");
  for (const auto& [flag, file] : {std::pair{"train_file", data.train_file},
                                   std::pair{"validation_file", data.validation_file}}) {
    if (file.empty()) continue;
    if (!known_extension(file))
      throw ArgumentError(std::string("--") + flag + " " + file +
                          " should be a .txt, .json or .jsonl file");
    if (!fs::is_regular_file(file))
      throw ArgumentError(std::string("--") + flag + " " + file + " does not exist");
  }
  if (!args.do_train && !args.do_eval)
    throw ArgumentError("nothing to do: pass --do_train and/or --do_eval");
  if (args.do_train && data.train_file.empty())
    throw ArgumentError("--do_train requires a train dataset: give --train_file");
  if (data.validation_split_percentage < 0 || data.validation_split_percentage > 100)
    throw ArgumentError("--validation_split_percentage must be between 0 and 100, got " +
                        std::to_string(data.validation_split_percentage));
  if (data.block_size && *data.block_size < 1)
    throw ArgumentError("--block_size must be >= 1, got " + std::to_string(*data.block_size));
  if (data.max_seq_length && *data.max_seq_length < 1)
    throw ArgumentError("--max_seq_length must be >= 1, got " +
                        std::to_string(*data.max_seq_length));
  if (!(data.mlm_probability >= 0.0 && data.mlm_probability <= 1.0))
    throw ArgumentError(
        fmt::format("--mlm_probability should be between 0 and 1, got {}", data.mlm_probability));
  if (data.pad_to_max_length && !data.line_by_line)
    throw ArgumentError(
        "--pad_to_max_length applies to --line_by_line examples (the grouped ones are all "
        "max_seq_length long already): add --line_by_line or drop it");
  for (const auto& [flag, value] : {std::pair{"max_train_samples", data.max_train_samples},
                                    std::pair{"max_eval_samples", data.max_eval_samples}})
    if (value && *value < 1)
      throw ArgumentError(std::string("--") + flag + " must be >= 1, got " +
                          std::to_string(*value));
  if (!model.config_overrides.empty() &&
      (!model.config_name.empty() || !model.model_name_or_path.empty()))
    throw ArgumentError(
        "--config_overrides can't be used in combination with --config_name or "
        "--model_name_or_path");
  if (model.model_name_or_path.empty() && model.config_name.empty() && model.model_type.empty())
    throw ArgumentError(
        "give --model_name_or_path (a model folder), or --model_type (with --config_overrides) "
        "or --config_name to train a new model from scratch");
  if (model.model_name_or_path.empty() && model.tokenizer_name.empty())
    throw ArgumentError(
        "You are instantiating a new tokenizer from scratch. This is not supported by this "
        "program: give --tokenizer_name (a tokenizer folder, e.g. one trained with the tokenizers "
        "library and saved)");
  if (!model.model_name_or_path.empty() && !fs::is_directory(model.model_name_or_path))
    throw ArgumentError("--model_name_or_path " + model.model_name_or_path + " is not a folder");
  lora.validate(args.do_train);
}

}  // namespace run_lm
