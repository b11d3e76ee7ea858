// ctrainer-custom-trainer: how to customise the Trainer from C++, on real data.
//
//   * WeightedLossTrainer overrides compute_loss with a class-weighted cross-entropy (the custom
//     loss example of HF's Trainer docs). MRPC is imbalanced (68% paraphrases), so each class is
//     weighted by n_examples / (n_classes * n_class_examples) ("balanced" weights).
//   * MetricsCsvCallback is a TrainerCallback that appends every evaluation to
//     <output_dir>/eval_metrics.csv (step, epoch, metrics) as it happens.
//
//   ctrainer-custom-trainer --output_dir out --do_train --do_eval --num_train_epochs 3
//
// Every TrainingArguments flag is accepted (see --help).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <torch/nn/functional/loss.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/examples/glue/glue_dataset.h>
#include <ctrainer/examples/glue/glue_metrics.h>
#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/data/padding_collator.h>
#include <ctrainer/trainer/runtime/seed.h>
#include <ctrainer/trainer/trainer.h>

namespace {
namespace fs = std::filesystem;

/// HF docs: "override compute_loss ... a weighted loss when the classes are imbalanced".
class WeightedLossTrainer : public ctrainer::Trainer {
 public:
  WeightedLossTrainer(std::shared_ptr<ctrainer::Model> model, ctrainer::TrainingArguments args,
                      ctrainer::TrainerComponents components, at::Tensor class_weights)
      : Trainer(std::move(model), std::move(args), std::move(components)),
        class_weights_(std::move(class_weights)) {}

  ctrainer::LossAndOutputs compute_loss(ctrainer::Model& model, const ctrainer::Batch& inputs,
                                        bool /*return_outputs*/,
                                        std::optional<int64_t> /*num_items_in_batch*/) override {
    ctrainer::Batch features = inputs;
    features.erase("labels");  // the model then returns logits only
    ctrainer::ModelOutput outputs = model.forward(features);
    namespace F = torch::nn::functional;
    at::Tensor loss = F::cross_entropy(
        outputs.logits.to(at::kFloat), inputs.at("labels"),
        F::CrossEntropyFuncOptions().weight(class_weights_.to(outputs.logits.device())));
    return {loss, outputs};
  }

 private:
  at::Tensor class_weights_;
};

/// Appends each evaluation's metrics to a CSV file while training runs.
class MetricsCsvCallback : public ctrainer::TrainerCallback {
 public:
  explicit MetricsCsvCallback(fs::path path) : path_(std::move(path)) {}
  std::string name() const override { return "MetricsCsvCallback"; }

  void on_evaluate(const ctrainer::TrainingArguments& args, ctrainer::TrainerState& state,
                   ctrainer::TrainerControl& /*control*/,
                   const ctrainer::CallbackContext& ctx) override {
    if (!state.is_world_process_zero || ctx.metrics == nullptr) return;
    const bool new_file = !fs::exists(path_);
    std::ofstream out(path_, std::ios::app);
    if (new_file) {
      out << "step,epoch";
      for (const auto& [key, value] : *ctx.metrics) out << ',' << key;
      out << '\n';
    }
    out << state.global_step << ',' << state.epoch.value_or(0.0);
    for (const auto& [key, value] : *ctx.metrics) out << ',' << value;
    out << '\n';
    (void)args;
  }

 private:
  fs::path path_;
};

struct ExampleOptions {
  std::string data_dir = CTRAINER_EXAMPLE_DATA_DIR "/glue/MRPC";
  std::string vocab = CTRAINER_EXAMPLE_DATA_DIR "/vocab/bert-base-uncased-vocab.txt";
  std::string config = CTRAINER_EXAMPLE_DATA_DIR "/configs/bert-tiny.json";
  int64_t max_seq_length = 128;
  std::optional<int64_t> max_train_samples;

  void register_flags(ctrainer::ArgumentParser& parser) {
    parser.add_option("data_dir", &data_dir, "MRPC folder of the GLUE download.");
    parser.add_option("vocab", &vocab, "BERT vocab.txt.");
    parser.add_option("model_config", &config, "BERT config.json of the new model.");
    parser.add_option("max_seq_length", &max_seq_length, "Longest tokenized pair.");
    parser.add_option("max_train_samples", &max_train_samples, "Keep the first N train pairs.");
  }
};

/// "Balanced" class weights: n / (classes * count_c).
at::Tensor balanced_class_weights(const ctrainer::TokenizedDataset& train, int64_t classes) {
  at::Tensor counts = at::zeros({classes}, at::kDouble);
  for (int64_t label : train.data().labels) counts[label] += 1;
  return (static_cast<double>(train.size()) / (static_cast<double>(classes) * counts))
      .to(at::kFloat);
}

int run(ctrainer::TrainingArguments args, const ExampleOptions& opt) {
  if (!args.do_train && !args.do_eval)
    throw ctrainer::ArgumentError("nothing to do: pass --do_train and/or --do_eval");
  const auto& task = ctrainer::glue::glue_task("mrpc");
  auto tokenizer = ctrainer::BertTokenizer::from_vocab_file(opt.vocab);
  ctrainer::glue::TokenizeOptions tokenize{.max_seq_length = opt.max_seq_length};
  auto train =
      ctrainer::glue::load_glue_dataset(task, opt.data_dir, "train", tokenizer, tokenize).dataset;
  if (opt.max_train_samples)
    train = std::make_shared<ctrainer::TokenizedDataset>(train->head(*opt.max_train_samples));
  auto eval =
      ctrainer::glue::load_glue_dataset(task, opt.data_dir, "dev", tokenizer, tokenize).dataset;
  const at::Tensor weights = balanced_class_weights(*train, task.num_labels());
  std::printf("class weights: not_equivalent %.3f, equivalent %.3f\n", weights[0].item<float>(),
              weights[1].item<float>());

  ctrainer::BertConfig config = ctrainer::BertConfig::from_json_file(opt.config);
  config.set_num_labels(task.num_labels());
  ctrainer::set_seed(args.seed);
  auto model = std::make_shared<ctrainer::BertForSequenceClassification>(config);

  auto collator = std::make_shared<ctrainer::DataCollatorWithPadding>(
      ctrainer::PaddingCollatorOptions{.pad_token_id = tokenizer.pad_token_id()});
  auto metrics = [&task](const ctrainer::EvalPrediction& p) {
    return ctrainer::metrics::glue_metrics(task.name, p.predictions, p.label_ids);
  };
  WeightedLossTrainer trainer(model, args,
                              {.train_dataset = train,
                               .eval_dataset = eval,
                               .data_collator = collator,
                               .compute_metrics = metrics,
                               .callbacks = {std::make_shared<MetricsCsvCallback>(
                                   fs::path(args.output_dir) / "eval_metrics.csv")}},
                              weights);
  if (args.do_train) {
    auto result = trainer.train().metrics;
    trainer.log_metrics("train", result);
  }
  if (args.do_eval) {
    auto result = trainer.evaluate();
    trainer.log_metrics("eval", result);
    trainer.save_metrics("eval", result);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ExampleOptions options;
  ctrainer::ArgumentParser parser(
      "A Trainer subclass with a class-weighted loss and a CSV metrics callback, on GLUE MRPC.");
  options.register_flags(parser);
  ctrainer::TrainingArguments args = ctrainer::parse_args_or_exit(parser, argc, argv);
  return ctrainer::run_reporting_errors([&] { return run(args, options); });
}
