#include "glue_arguments.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include <ctrainer/core/errors.h>
#include <ctrainer/examples/glue/glue_task.h>

namespace run_glue {
namespace fs = std::filesystem;
using ctrainer::ArgumentError;

std::string DataArguments::resolved_cache_dir() const {
  if (!cache_dir.empty()) return cache_dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "ctrainer" / "datasets").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "ctrainer" / "datasets").string();
  return (fs::temp_directory_path() / "ctrainer-datasets").string();
}

void GlueArguments::register_flags(ctrainer::ArgumentParser& parser) {
  parser.add_option("task_name", &data.task_name,
                    "The GLUE task: cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte or wnli.");
  parser.add_option("data_dir", &data.data_dir,
                    "The task's folder of the GLUE download (train.tsv, dev.tsv, test.tsv; MNLI: "
                    "dev_matched.tsv, dev_mismatched.tsv, test_matched.tsv, test_mismatched.tsv).");
  parser.add_option("train_file", &data.train_file,
                    "Training TSV in the task's GLUE layout (overrides --data_dir's train.tsv).");
  parser.add_option("validation_file", &data.validation_file,
                    "Evaluation TSV in the task's GLUE layout (overrides --data_dir's dev file).");
  parser.add_option("test_file", &data.test_file,
                    "Prediction TSV in the task's GLUE test layout (overrides --data_dir's).");
  parser.add_option("max_seq_length", &data.max_seq_length,
                    "The maximum total input sequence length after tokenization. Longer sequences "
                    "are truncated (longest_first).");
  parser.add_option("pad_to_max_length", &data.pad_to_max_length,
                    "Pad every example to max_seq_length. If false, pad each batch dynamically to "
                    "its longest example.");
  parser.add_option("max_train_samples", &data.max_train_samples,
                    "Keep only the first N training examples (debugging, quick runs).");
  parser.add_option("max_eval_samples", &data.max_eval_samples,
                    "Keep only the first N evaluation examples.");
  parser.add_option("max_predict_samples", &data.max_predict_samples,
                    "Keep only the first N prediction examples.");
  parser.add_option("overwrite_cache", &data.overwrite_cache,
                    "Tokenize again even when the tokenized-dataset cache holds the splits.");
  parser.add_option("cache_dir", &data.cache_dir,
                    "Folder of the tokenized-dataset cache (default: $XDG_CACHE_HOME/ctrainer/"
                    "datasets or ~/.cache/ctrainer/datasets).");
  parser.add_option("model_name_or_path", &model.model_name_or_path,
                    "Folder of a pretrained model: config.json, model.safetensors (HF names) and "
                    "vocab.txt. Leave empty to train from scratch with --config_name and "
                    "--tokenizer_name.");
  parser.add_option("config_name", &model.config_name,
                    "config.json (or a folder holding one) if not the model's.");
  parser.add_option("tokenizer_name", &model.tokenizer_name,
                    "vocab.txt (or a folder holding one) if not the model's.");
  parser.add_option("do_lower_case", &model.do_lower_case,
                    "Lower-case and strip accents before WordPiece: auto (the tokenizer folder's "
                    "tokenizer_config.json, else true), true or false.");
  parser.add_option("plot", &plot,
                    "ctrainer's: when the run ends, draw output_dir/training_curves.svg (training "
                    "loss, learning rate, gradient norm, eval metrics per step), as ctrainer-plot "
                    "OUTPUT_DIR does.");
  parser.add_option("ignore_mismatched_sizes", &model.ignore_mismatched_sizes,
                    "Re-initialise checkpoint weights whose shape differs from the model's (a "
                    "classifier head with another number of labels) instead of failing.");
  parser.add_option("full_last_layer", &model.full_last_layer,
                    "ctrainer's: compute every position in the last encoder layer, as "
                    "transformers does. By default a BERT classifier's last layer computes the "
                    "[CLS] row alone, the only one the head reads (same values and gradients, "
                    "less work); this flag makes the FLOPs equal to transformers' for a "
                    "comparison of the trainers alone.");
  lora.register_flags(parser);
}

void GlueArguments::validate(const ctrainer::TrainingArguments& args) const {
  if (data.task_name.empty())
    throw ArgumentError(
        "--task_name is required (cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte or wnli); it "
        "names the TSV layout, labels and metric");
  (void)ctrainer::glue::glue_task(data.task_name);  // throws with the list of tasks
  if (!args.do_train && !args.do_eval && !args.do_predict)
    throw ArgumentError("nothing to do: pass --do_train, --do_eval and/or --do_predict");
  auto need_file = [&](bool wanted, const std::string& file, const char* flag,
                       const char* channel) {
    if (wanted && file.empty() && data.data_dir.empty())
      throw ArgumentError(std::string("--") + flag + " or --data_dir is required with this run" +
                          " (on SageMaker: an input channel, " + channel + ")");
  };
  need_file(args.do_train, data.train_file, "train_file", "SM_CHANNEL_TRAIN");
  need_file(args.do_eval, data.validation_file, "validation_file", "SM_CHANNEL_EVAL");
  need_file(args.do_predict, data.test_file, "test_file", "SM_CHANNEL_TEST");
  if (!data.data_dir.empty() && !fs::is_directory(data.data_dir))
    throw ArgumentError("--data_dir " + data.data_dir + " is not a folder");
  if (data.max_seq_length < 2)
    throw ArgumentError("--max_seq_length must be >= 2 ([CLS] and [SEP]), got " +
                        std::to_string(data.max_seq_length));
  for (const auto& [flag, value] : {std::pair{"max_train_samples", data.max_train_samples},
                                    std::pair{"max_eval_samples", data.max_eval_samples},
                                    std::pair{"max_predict_samples", data.max_predict_samples}})
    if (value && *value < 1)
      throw ArgumentError(std::string("--") + flag + " must be >= 1, got " +
                          std::to_string(*value));
  if (model.model_name_or_path.empty() &&
      (model.config_name.empty() || model.tokenizer_name.empty()))
    throw ArgumentError(
        "give --model_name_or_path (a folder with config.json, model.safetensors and vocab.txt), "
        "or --config_name and --tokenizer_name to train a new model from scratch");
  if (!model.model_name_or_path.empty() && !fs::is_directory(model.model_name_or_path))
    throw ArgumentError("--model_name_or_path " + model.model_name_or_path +
                        " is not a folder (expected config.json, model.safetensors, vocab.txt)");
  std::string lower = model.do_lower_case;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower != "auto" && lower != "true" && lower != "false")
    throw ArgumentError("--do_lower_case must be auto, true or false, got '" + model.do_lower_case +
                        "'");
  lora.validate(args.do_train);
}

void GlueArguments::apply_sagemaker_channels(const ctrainer::EnvironmentMap& environment) {
  if (!data.data_dir.empty()) return;  // the user's folder wins over every channel
  auto fill = [&](std::string& file, const char* channel, std::vector<std::string> names) {
    if (!file.empty()) return;
    if (auto found = ctrainer::sagemaker_channel_file(environment, channel, names)) file = *found;
  };
  fill(data.train_file, "train", {"train.tsv"});
  fill(data.validation_file, "eval", {"dev.tsv", "dev_matched.tsv"});
  fill(data.test_file, "test", {"test.tsv", "test_matched.tsv"});
}

}  // namespace run_glue
