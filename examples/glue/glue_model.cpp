#include "glue_model.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/trainer/core/errors.h>
#include <ctrainer/trainer/core/json_file.h>
#include <ctrainer/trainer/logging.h>

namespace run_glue {
namespace {
namespace fs = std::filesystem;
using ctrainer::ArgumentError;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

/// `path` itself when it is a file, else `path`/`file_name`; ArgumentError when absent.
std::string file_in(const std::string& path, const std::string& file_name, const char* flag) {
  const fs::path p(path);
  const fs::path candidate = fs::is_directory(p) ? p / file_name : p;
  if (!fs::is_regular_file(candidate))
    throw ArgumentError(std::string("--") + flag + ": " + candidate.string() +
                        " does not exist (expected " + file_name + " or a folder holding one)");
  return candidate.string();
}

/// HF's tokenizer_config.json next to the vocabulary decides do_lower_case when the flag says
/// auto; without one, BertTokenizer's default (true) applies.
bool resolve_do_lower_case(const std::string& flag, const std::string& vocab_path) {
  const std::string value = lower(flag);
  if (value != "auto") return value == "true";
  const fs::path config = fs::path(vocab_path).parent_path() / "tokenizer_config.json";
  if (!fs::is_regular_file(config)) return true;
  std::ifstream in(config);
  try {
    const auto json = nlohmann::json::parse(in);
    if (json.contains("do_lower_case")) return json.at("do_lower_case").get<bool>();
  } catch (const std::exception& e) {
    throw ArgumentError(config.string() + " is not a valid tokenizer_config.json (" + e.what() +
                        "); fix it or pass --do_lower_case true|false");
  }
  return true;
}

/// run_glue's label_to_id: when the model's config names its labels (not LABEL_i) and the names
/// are the task's (ignoring case), dataset class i maps to the model's id of that name.
std::vector<int64_t> model_label_order(const ctrainer::BertConfig& config,
                                       const ctrainer::glue::GlueTask& task) {
  if (task.is_regression() || config.num_labels() != task.num_labels()) return {};
  bool generic = true;
  for (size_t i = 0; i < config.id2label.size(); ++i)
    generic = generic && config.id2label[i] == "LABEL_" + std::to_string(i);
  if (generic) return {};
  std::vector<int64_t> mapping;
  for (const auto& name : task.label_names) {
    auto it = std::find_if(config.id2label.begin(), config.id2label.end(),
                           [&](const std::string& l) { return lower(l) == name; });
    if (it == config.id2label.end()) {
      ctrainer::logging::logger()->warn(
          "Your model seems to have been trained with labels, but they don't match the dataset: "
          "model labels: {}, dataset labels: {}. Ignoring the model labels as a result.",
          nlohmann::json(config.id2label).dump(), nlohmann::json(task.label_names).dump());
      return {};
    }
    mapping.push_back(static_cast<int64_t>(it - config.id2label.begin()));
  }
  return mapping;
}

}  // namespace

ModelBundle load_model_and_tokenizer(const ModelArguments& model_args,
                                     const ctrainer::glue::GlueTask& task) {
  ModelBundle bundle;
  const std::string& model_dir = model_args.model_name_or_path;
  bundle.vocab_path = model_args.tokenizer_name.empty()
                          ? file_in(model_dir, "vocab.txt", "model_name_or_path")
                          : file_in(model_args.tokenizer_name, "vocab.txt", "tokenizer_name");
  bundle.do_lower_case = resolve_do_lower_case(model_args.do_lower_case, bundle.vocab_path);
  ctrainer::BertTokenizerOptions tokenizer_options;
  tokenizer_options.do_lower_case = bundle.do_lower_case;
  bundle.tokenizer = std::make_shared<ctrainer::BertTokenizer>(
      ctrainer::BertTokenizer::from_vocab_file(bundle.vocab_path, tokenizer_options));

  const std::string config_path =
      model_args.config_name.empty()
          ? file_in(model_dir, "config.json", "model_name_or_path")
          : file_in(model_args.config_name, "config.json", "config_name");
  ctrainer::BertConfig config = ctrainer::BertConfig::from_json_file(config_path);
  bundle.task_to_model_label = model_label_order(config, task);
  if (bundle.task_to_model_label.empty()) {
    // HF: num_labels from the task, label names from the dataset (LABEL_0 for regression).
    config.set_num_labels(task.num_labels());
    if (!task.is_regression()) {
      config.id2label = task.label_names;
      config.label2id.clear();
      for (size_t i = 0; i < task.label_names.size(); ++i)
        config.label2id[task.label_names[i]] = static_cast<int64_t>(i);
    }
  }
  config.extra["finetuning_task"] = task.name;
  if (config.vocab_size < bundle.tokenizer->vocab_size())
    throw ArgumentError(config_path + ": vocab_size " + std::to_string(config.vocab_size) +
                        " is smaller than the vocabulary " + bundle.vocab_path + " (" +
                        std::to_string(bundle.tokenizer->vocab_size()) +
                        " tokens); use a config whose vocab_size covers it");
  config.validate(config_path);

  if (!model_dir.empty()) {
    ctrainer::WeightLoadOptions load =
        ctrainer::BertForSequenceClassification::weight_load_options();
    load.ignore_mismatched_sizes = model_args.ignore_mismatched_sizes;
    bundle.model =
        ctrainer::BertForSequenceClassification::with_pretrained_weights(config, model_dir, load);
  } else {
    bundle.model = std::make_shared<ctrainer::BertForSequenceClassification>(config);
    ctrainer::logging::logger()->info("Training a new model from scratch with {} ({} parameters)",
                                      config_path, [&] {
                                        int64_t n = 0;
                                        for (const auto& p : bundle.model->parameters())
                                          n += p.numel();
                                        return n;
                                      }());
  }
  return bundle;
}

void save_final_model(ctrainer::Trainer& trainer, const ModelBundle& bundle,
                      const std::string& dir) {
  trainer.save_model(dir);
  if (!trainer.process().is_world_process_zero()) return;
  const fs::path out(dir);
  if (fs::absolute(bundle.vocab_path) != fs::absolute(out / "vocab.txt"))
    fs::copy_file(bundle.vocab_path, out / "vocab.txt", fs::copy_options::overwrite_existing);
  const nlohmann::json tokenizer_config = {{"tokenizer_class", "BertTokenizer"},
                                           {"do_lower_case", bundle.do_lower_case},
                                           {"model_max_length", 512},
                                           {"unk_token", "[UNK]"},
                                           {"sep_token", "[SEP]"},
                                           {"pad_token", "[PAD]"},
                                           {"cls_token", "[CLS]"},
                                           {"mask_token", "[MASK]"}};
  ctrainer::write_json_file(out / "tokenizer_config.json", tokenizer_config);
}

}  // namespace run_glue
