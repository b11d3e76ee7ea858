#include "seq2seq_run.h"

#include <cstdio>
#include <fstream>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/models/generation/generation_config.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/tokenizers/tokenizer_registry.h>
#include <ctrainer/trainer/data/seq2seq_collator.h>
#include <ctrainer/trainer/runtime/logging.h>
#include <ctrainer/trainer/runtime/output_dir.h>
#include <ctrainer/trainer/runtime/sagemaker_outputs.h>
#include <ctrainer/trainer/runtime/seed.h>
#include <ctrainer/trainer/seq2seq_trainer.h>

namespace run_seq2seq {
namespace {
using ctrainer::ArgumentError;
using ctrainer::Metrics;
using ctrainer::generation::GenerationConfig;

at::Tensor as_tensor(const std::vector<int64_t>& values) {
  return at::tensor(values, at::TensorOptions().dtype(at::kLong));
}

/// Python's round(value, 4): to nearest, halves to even (of the double's exact value).
double round4(double value) {
  return std::nearbyint(value * 10000.0) / 10000.0;
}

/// Rows of `tensor` [N, W] with -100 (the evaluation loop's padding) replaced by `pad`.
std::vector<std::vector<int64_t>> id_rows(const at::Tensor& tensor, int64_t pad) {
  const at::Tensor t = tensor.to(at::kLong).masked_fill(tensor.eq(-100), pad).contiguous();
  std::vector<std::vector<int64_t>> rows;
  for (int64_t i = 0; i < t.size(0); ++i) {
    const int64_t* p = t[i].data_ptr<int64_t>();
    rows.emplace_back(p, p + t.size(1));
  }
  return rows;
}

std::string strip(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\n\r\f\v");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\n\r\f\v") - begin + 1);
}

std::vector<std::string> decode_stripped(const ctrainer::Tokenizer& tokenizer,
                                         const std::vector<std::vector<int64_t>>& rows) {
  std::vector<std::string> texts = tokenizer.decode_batch(rows, /*skip_special_tokens=*/true);
  for (std::string& text : texts) text = strip(text);
  return texts;
}

std::shared_ptr<ctrainer::Model> load_model(const ModelArguments& model) {
  if (model.model_name_or_path.empty())
    return ctrainer::AutoModel::from_config(
        *ctrainer::AutoConfig::from_pretrained(model.config_name), ctrainer::ModelTask::kSeq2SeqLM);
  const auto config = ctrainer::AutoConfig::from_pretrained(
      model.config_name.empty() ? model.model_name_or_path : model.config_name);
  return ctrainer::AutoModel::from_pretrained(model.model_name_or_path, *config,
                                              ctrainer::ModelTask::kSeq2SeqLM);
}

/// The split's pairs, the first `limit` of them when given (HF's select before map).
Pairs read_split(const Seq2SeqTask& task, const std::string& path, std::optional<int64_t> limit) {
  Pairs pairs = task.read_pairs(path);
  if (limit && *limit < static_cast<int64_t>(pairs.size()))
    pairs.resize(static_cast<size_t>(*limit));
  return pairs;
}

}  // namespace

ctrainer::Example PairDataset::get(int64_t index) const {
  const Row& row = rows_.at(static_cast<size_t>(index));
  return {{"input_ids", as_tensor(row.input_ids)},
          {"attention_mask", as_tensor(row.attention_mask)},
          {"labels", as_tensor(row.labels)}};
}

std::optional<std::vector<int64_t>> PairDataset::lengths() const {
  std::vector<int64_t> out;
  out.reserve(rows_.size());
  for (const Row& row : rows_) out.push_back(static_cast<int64_t>(row.input_ids.size()));
  return out;
}

std::shared_ptr<PairDataset> tokenize_pairs(const Pairs& pairs,
                                            const ctrainer::Tokenizer& tokenizer,
                                            const DataArguments& data, int64_t max_target_length) {
  ctrainer::EncodeOptions source_options, target_options;
  source_options.max_length = data.max_source_length;
  source_options.truncation = ctrainer::Truncation::kLongestFirst;
  target_options.max_length = max_target_length;
  target_options.truncation = ctrainer::Truncation::kLongestFirst;
  if (data.pad_to_max_length) {
    source_options.padding = ctrainer::Padding::kMaxLength;
    target_options.padding = ctrainer::Padding::kMaxLength;
  }
  std::vector<PairDataset::Row> rows;
  rows.reserve(pairs.size());
  for (const auto& [source, target] : pairs) {
    if (source.empty() || target.empty()) continue;  // HF: `if examples[text][i] and ...[i]`
    ctrainer::Encoding encoded = tokenizer.encode(data.source_prefix + source, {}, source_options);
    ctrainer::Encoding labels = tokenizer.encode(target, {}, target_options);
    if (data.pad_to_max_length && data.ignore_pad_token_for_loss)
      for (size_t i = 0; i < labels.input_ids.size(); ++i)
        if (labels.attention_mask[i] == 0) labels.input_ids[i] = -100;
    rows.push_back({std::move(encoded.input_ids), std::move(encoded.attention_mask),
                    std::move(labels.input_ids)});
  }
  return std::make_shared<PairDataset>(std::move(rows));
}

int run(Seq2SeqArguments& arguments, ctrainer::Seq2SeqTrainingArguments& args,
        const Seq2SeqTask& task) {
  arguments.validate(args);
  const DataArguments& data = arguments.data;
  ctrainer::logging::set_verbosity(spdlog::level::info);
  ctrainer::logging::setup(args, ctrainer::ProcessInfo::from_environment(args.local_rank));
  ctrainer::resume_from_detected_checkpoint(args);
  ctrainer::set_seed(args.seed);  // before the model is initialised, as HF's set_seed

  const ModelArguments& names = arguments.model;
  const auto tokenizer = ctrainer::AutoTokenizer::from_pretrained(
      names.tokenizer_name.empty() ? names.model_name_or_path : names.tokenizer_name);
  const auto model = load_model(names);
  const nlohmann::json config = model->config().value_or(nlohmann::json::object());
  if (!config.contains("decoder_start_token_id") || config["decoder_start_token_id"].is_null())
    throw ArgumentError(
        "the model's config.json has no decoder_start_token_id: set it (T5: 0, the pad id; "
        "BART: 2, the eos id) so that decoder inputs can be made from the labels");
  if (config.value("vocab_size", int64_t{0}) < tokenizer->vocab_size())
    throw ArgumentError("the tokenizer has " + std::to_string(tokenizer->vocab_size()) +
                        " tokens but the model's embeddings only " +
                        std::to_string(config.value("vocab_size", int64_t{0})) +
                        ": use the model's own tokenizer, or a config with a vocab_size of at "
                        "least the tokenizer's");
  GenerationConfig generation =
      names.model_name_or_path.empty()
          ? GenerationConfig::from_model_config(config, "the model's config.json")
          : GenerationConfig::for_model_folder(names.model_name_or_path);
  if (!data.forced_bos_token.empty()) {
    const auto id = tokenizer->token_to_id(data.forced_bos_token);
    if (!id)
      throw ArgumentError("--forced_bos_token " + data.forced_bos_token +
                          ": the tokenizer has no such token");
    generation.forced_bos_token_id = *id;
  }
  // HF's scripts: the generation follows the data flags unless the training flags say.
  if (!args.generation_max_length) args.generation_max_length = data.eval_target_length();
  if (data.num_beams) args.generation_num_beams = data.num_beams;

  std::shared_ptr<PairDataset> train, eval, predict;
  if (args.do_train)
    train = tokenize_pairs(read_split(task, data.train_file, data.max_train_samples), *tokenizer,
                           data, data.max_target_length);
  if (args.do_eval)
    eval = tokenize_pairs(read_split(task, data.validation_file, data.max_eval_samples), *tokenizer,
                          data, data.eval_target_length());
  if (args.do_predict)
    predict = tokenize_pairs(read_split(task, data.test_file, data.max_predict_samples), *tokenizer,
                             data, data.eval_target_length());

  const int64_t pad = tokenizer->pad_id();
  ctrainer::Seq2SeqCollatorOptions collation;
  collation.pad_token_id = pad;
  collation.pad_left = tokenizer->padding_side() == ctrainer::Side::kLeft;
  collation.label_pad_token_id = data.ignore_pad_token_for_loss ? -100 : pad;
  if (args.fp16) collation.pad_to_multiple_of = 8;
  if (!data.pad_to_max_length) {  // padded rows go through as they are (default_data_collator)
    collation.decoder_start_token_id = config["decoder_start_token_id"].get<int64_t>();
    collation.decoder_pad_token_id = config.value("pad_token_id", pad);
  }
  ctrainer::ComputeMetricsFn compute_metrics;
  if (args.predict_with_generate)
    compute_metrics = [&](const ctrainer::EvalPrediction& prediction) {
      const auto predicted = id_rows(prediction.predictions, pad);
      Metrics metrics =
          task.metrics(decode_stripped(*tokenizer, predicted),
                       decode_stripped(*tokenizer, id_rows(prediction.label_ids, pad)));
      double tokens = 0;
      for (const auto& row : predicted)
        tokens += static_cast<double>(
            std::count_if(row.begin(), row.end(), [&](int64_t id) { return id != pad; }));
      metrics["gen_len"] = predicted.empty() ? 0.0 : tokens / static_cast<double>(predicted.size());
      for (auto& [key, value] : metrics) value = round4(value);
      return metrics;
    };
  ctrainer::Seq2SeqTrainer trainer(
      model, args,
      {.train_dataset = train,
       .eval_dataset = eval,
       .data_collator = std::make_shared<ctrainer::DataCollatorForSeq2Seq>(collation),
       .compute_metrics = compute_metrics},
      {.model_generation_config = generation, .pad_token_id = pad});

  if (args.do_train) {
    ctrainer::TrainOutput result = trainer.train();
    trainer.save_model(args.output_dir);
    if (trainer.process().is_world_process_zero()) tokenizer->save_pretrained(args.output_dir);
    Metrics metrics = result.metrics;
    metrics["train_samples"] = static_cast<double>(train->size());
    trainer.log_metrics("train", metrics);
    trainer.save_metrics("train", metrics);
    trainer.save_state();
  }
  if (args.do_eval) {
    ctrainer::logging::logger()->info("*** Evaluate ***");
    Metrics metrics = trainer.evaluate(eval, "eval");
    metrics["eval_samples"] = static_cast<double>(eval->size());
    trainer.log_metrics("eval", metrics);
    trainer.save_metrics("eval", metrics);
  }
  if (args.do_predict) {
    ctrainer::logging::logger()->info("*** Predict ***");
    const ctrainer::PredictionOutput output = trainer.predict(predict, "predict");
    Metrics metrics = output.metrics;
    metrics["predict_samples"] = static_cast<double>(predict->size());
    trainer.log_metrics("predict", metrics);
    trainer.save_metrics("predict", metrics);
    if (trainer.process().is_world_process_zero() && args.predict_with_generate) {
      const std::vector<std::string> texts =
          decode_stripped(*tokenizer, id_rows(output.predictions, pad));
      std::ofstream out(std::filesystem::path(args.output_dir) / "generated_predictions.txt",
                        std::ios::binary);
      for (size_t i = 0; i < texts.size(); ++i) out << (i ? "\n" : "") << texts[i];
      if (!out)
        throw std::runtime_error("cannot write generated_predictions.txt in " + args.output_dir);
    }
  }
  ctrainer::publish_sagemaker_outputs(args);  // a no-op outside SageMaker
  return 0;
}

}  // namespace run_seq2seq
