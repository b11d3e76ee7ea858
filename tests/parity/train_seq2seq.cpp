// ctrainer_parity_train_seq2seq: Seq2SeqTrainer on an encoder-decoder, for the comparison with
// transformers' Seq2SeqTrainer (tests/parity/seq2seq_trainer_vs_hf.py). Loads --model_dir with
// AutoModel (seq2seq_lm) and its generation config, trains on the rows of --train_data (a
// safetensors file of input_ids, attention_mask and labels) with every Seq2SeqTrainingArguments
// flag, then evaluates on --eval_data and predicts it again with --predict_num_beams and
// --predict_max_new_tokens as the call's generation settings. compute_metrics gives gen_len and
// token_accuracy (defined as in the script). Writes the log history, both metrics and the
// predictions and labels to --result_file as JSON.
#include <fstream>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/trainer/seq2seq_trainer.h>

namespace {

struct Files {
  std::string model_dir, train_data, eval_data, result_file;
  std::optional<int64_t> predict_num_beams, predict_max_new_tokens;
};

/// The script's metrics: gen_len, the mean count of generated ids that are neither padding nor
/// -100; token_accuracy, the share of label tokens (not -100, not padding) that the generation
/// (after its start token) repeats at the same position; width, the predictions' columns.
ctrainer::Metrics token_metrics(const ctrainer::EvalPrediction& prediction, int64_t pad) {
  const at::Tensor preds = prediction.predictions.to(at::kLong);
  const at::Tensor labels = prediction.label_ids.to(at::kLong);
  const at::Tensor kept = preds.ne(pad).logical_and(preds.ne(-100));
  const double gen_len = kept.sum(1).to(at::kDouble).mean().item<double>();
  const int64_t width = std::min(labels.size(1), preds.size(1) - 1);
  const at::Tensor target = labels.narrow(1, 0, width);
  const at::Tensor scored = target.ne(-100).logical_and(target.ne(pad));
  const at::Tensor hits = preds.narrow(1, 1, width).eq(target).logical_and(scored);
  const double accuracy =
      hits.sum().item<double>() / std::max<double>(1, scored.sum().item<double>());
  return {{"gen_len", gen_len},
          {"token_accuracy", accuracy},
          {"width", static_cast<double>(preds.size(1))}};
}

nlohmann::json rows(const at::Tensor& tensor) {
  const at::Tensor t = tensor.to(at::kLong).contiguous();
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < t.size(0); ++i) {
    const int64_t* p = t[i].data_ptr<int64_t>();
    out.push_back(std::vector<int64_t>(p, p + t.size(1)));
  }
  return out;
}

int run(const ctrainer::Seq2SeqTrainingArguments& args, const Files& files) {
  if (files.model_dir.empty() || files.train_data.empty() || files.eval_data.empty() ||
      files.result_file.empty())
    throw ctrainer::ArgumentError("give --model_dir, --train_data, --eval_data and --result_file");
  auto model =
      ctrainer::AutoModel::from_pretrained(files.model_dir, ctrainer::ModelTask::kSeq2SeqLM);
  auto load = [](const std::string& path) {
    return std::make_shared<ctrainer::TensorDataset>(ctrainer::load_safetensors(path).tensors);
  };
  auto eval_dataset = load(files.eval_data);
  const int64_t pad = model->config()->value("pad_token_id", int64_t{0});
  ctrainer::Seq2SeqTrainer trainer(
      model, args,
      {.train_dataset = load(files.train_data),
       .eval_dataset = eval_dataset,
       .compute_metrics = [pad](const auto& p) { return token_metrics(p, pad); }},
      {.model_generation_config =
           ctrainer::generation::GenerationConfig::for_model_folder(files.model_dir)});
  trainer.train();
  const ctrainer::Metrics eval = trainer.evaluate();
  ctrainer::generation::GenerationConfig call;
  call.num_beams = files.predict_num_beams;
  call.max_new_tokens = files.predict_max_new_tokens;
  const ctrainer::PredictionOutput predicted = trainer.predict(eval_dataset, "test", call);
  nlohmann::json result = {{"log_history", trainer.state().log_history},
                           {"eval_metrics", eval},
                           {"predict_metrics", predicted.metrics},
                           {"predictions", rows(predicted.predictions)},
                           {"label_ids", rows(predicted.label_ids)}};
  std::ofstream out(files.result_file);
  out << result.dump(1) << '\n';
  return out ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Files files;
  ctrainer::ArgumentParser parser(
      "Trains and evaluates a seq2seq model for the parity test with transformers.");
  parser.add_option("model_dir", &files.model_dir, "A model folder (config.json, safetensors).");
  parser.add_option("train_data", &files.train_data, "Training rows as a safetensors file.");
  parser.add_option("eval_data", &files.eval_data, "Evaluation rows as a safetensors file.");
  parser.add_option("result_file", &files.result_file, "Where the results go (JSON).");
  parser.add_option("predict_num_beams", &files.predict_num_beams, "predict()'s num_beams.");
  parser.add_option("predict_max_new_tokens", &files.predict_max_new_tokens,
                    "predict()'s max_new_tokens.");
  ctrainer::Seq2SeqTrainingArguments args;
  ctrainer::parse_seq2seq_args_or_exit(parser, argc, argv, args);
  return ctrainer::run_reporting_errors([&] { return run(args, files); });
}
