#include "seq2seq_arguments.h"

#include <filesystem>

#include <ctrainer/core/errors.h>

namespace run_seq2seq {
namespace fs = std::filesystem;
using ctrainer::ArgumentError;

void Seq2SeqArguments::register_flags(ctrainer::ArgumentParser& parser) {
  const bool summarization = task == Task::kSummarization;
  parser.add_option("dataset_name", &data.dataset_name,
                    "A dataset of the Hugging Face hub: not supported (no hub); use --train_file.");
  parser.add_option("dataset_config_name", &data.dataset_config_name,
                    "The hub dataset's configuration: not supported (no hub).");
  const std::string formats =
      summarization ? "a .csv file (a header row) or a .json/.jsonl file of objects (JSON lines "
                      "or one array)"
                    : "a .json/.jsonl file of objects whose \"translation\" object holds the "
                      "--source_lang and --target_lang texts (JSON lines or one array)";
  parser.add_option("train_file", &data.train_file, "The training pairs: " + formats + ".");
  parser.add_option("validation_file", &data.validation_file,
                    "The evaluation pairs (--do_eval), in the same formats.");
  parser.add_option("test_file", &data.test_file,
                    "The prediction pairs (--do_predict), in the same formats.");
  if (summarization) {
    parser.add_option("text_column", &data.text_column,
                      "The column of the full texts (default: the file's first column).");
    parser.add_option("summary_column", &data.summary_column,
                      "The column of the summaries (default: the file's second column).");
  } else {
    parser.add_option("source_lang", &data.source_lang, "Source language id (e.g. en).");
    parser.add_option("target_lang", &data.target_lang, "Target language id (e.g. de).");
    parser.add_option("forced_bos_token", &data.forced_bos_token,
                      "The token forced as the first generated token (multilingual models such "
                      "as mBART: the target language code); it must be in the vocabulary.");
  }
  parser.add_option("source_prefix", &data.source_prefix,
                    "A prefix added before every source text (T5: \"summarize: \", \"translate "
                    "English to German: \").");
  parser.add_option("max_source_length", &data.max_source_length,
                    "The maximum total input length after tokenization; longer sources are "
                    "truncated.");
  parser.add_option("max_target_length", &data.max_target_length,
                    "The maximum total length of the training targets after tokenization; longer "
                    "ones are truncated.");
  parser.add_option("val_max_target_length", &data.val_max_target_length,
                    "The maximum target length of the validation and test sets, and the "
                    "generation's max_length in evaluate / predict unless --generation_max_length "
                    "is given. Default: --max_target_length.");
  parser.add_option("pad_to_max_length", &data.pad_to_max_length,
                    "Pad all sources and targets to the maximal lengths instead of each batch to "
                    "its longest example.");
  parser.add_option("max_train_samples", &data.max_train_samples,
                    "Keep only the first N training pairs.");
  parser.add_option("max_eval_samples", &data.max_eval_samples,
                    "Keep only the first N evaluation pairs.");
  parser.add_option("max_predict_samples", &data.max_predict_samples,
                    "Keep only the first N prediction pairs.");
  parser.add_option("num_beams", &data.num_beams,
                    "Beams of the generation in evaluate / predict (default: "
                    "--generation_num_beams, else the model's generation config).");
  parser.add_option("ignore_pad_token_for_loss", &data.ignore_pad_token_for_loss,
                    "Pad the labels with -100 (ignored by the loss) instead of the pad token.");
  parser.add_option("overwrite_cache", &data.overwrite_cache,
                    "Accepted for HF's command lines: nothing is cached (the files are "
                    "tokenized on every run), so there is nothing to overwrite.");
  parser.add_option("model_name_or_path", &model.model_name_or_path,
                    "Folder of a pretrained model (config.json, safetensors weights, tokenizer "
                    "files).");
  parser.add_option("config_name", &model.config_name,
                    "config.json (or a folder holding one) if not the model's; without "
                    "--model_name_or_path the model starts from it with new weights.");
  parser.add_option("tokenizer_name", &model.tokenizer_name,
                    "Tokenizer folder (tokenizer.json, ...) if not the model's.");
}

void Seq2SeqArguments::validate(const ctrainer::Seq2SeqTrainingArguments& args) const {
  if (!data.dataset_name.empty() || !data.dataset_config_name.empty())
    throw ArgumentError("--dataset_name " + data.dataset_name +
                        ": ctrainer reaches no dataset hub; give --train_file, --validation_file "
                        "and --test_file");
  if (model.model_name_or_path.empty() && model.config_name.empty())
    throw ArgumentError(
        "give --model_name_or_path (a model folder), or --config_name (a config.json) to start "
        "a model with new weights");
  if (model.model_name_or_path.empty() && model.tokenizer_name.empty())
    throw ArgumentError("--config_name without --model_name_or_path needs --tokenizer_name");
  const bool summarization = task == Task::kSummarization;
  auto check_file = [&](const std::string& flag, const std::string& file, bool needed,
                        const std::string& step) {
    if (file.empty()) {
      if (needed)
        throw ArgumentError(step + " needs " + flag + " (there is no dataset hub to read from)");
      return;
    }
    const std::string ext = fs::path(file).extension().string();
    const bool known = ext == ".json" || ext == ".jsonl" || (summarization && ext == ".csv");
    if (!known)
      throw ArgumentError(flag + " " + file + ": " +
                          (summarization ? "a .csv, .json or .jsonl file is expected"
                                         : "a .json or .jsonl file is expected (run_translation "
                                           "reads JSON records with a \"translation\" object)"));
    if (!fs::is_regular_file(file)) throw ArgumentError(flag + " " + file + ": no such file");
  };
  check_file("--train_file", data.train_file, args.do_train, "--do_train");
  check_file("--validation_file", data.validation_file, args.do_eval, "--do_eval");
  check_file("--test_file", data.test_file, args.do_predict, "--do_predict");
  if (!summarization && (data.source_lang.empty() || data.target_lang.empty()))
    throw ArgumentError(
        "run_translation needs --source_lang and --target_lang (the keys of each record's "
        "\"translation\" object, e.g. en and de)");
  for (const auto& [flag, value] : {std::pair{"--max_source_length", data.max_source_length},
                                    std::pair{"--max_target_length", data.max_target_length}})
    if (value < 1) throw ArgumentError(std::string(flag) + " must be at least 1");
  if (data.val_max_target_length && *data.val_max_target_length < 1)
    throw ArgumentError("--val_max_target_length must be at least 1");
  if (data.num_beams && *data.num_beams < 1) throw ArgumentError("--num_beams must be at least 1");
}

}  // namespace run_seq2seq
