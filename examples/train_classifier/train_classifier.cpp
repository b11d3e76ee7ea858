// ctrainer-train-classifier: trains an MLP on the three-armed spiral problem (a classic
// non-linear classification task, generated deterministically from --seed) with the Trainer and
// prints / saves its metrics, like Hugging Face's example scripts.
//
//   ctrainer-train-classifier --output_dir out --do_train --do_eval --num_train_epochs 20
//
// Every TrainingArguments flag is accepted (see --help), plus the data/model flags below.
#include <cmath>
#include <cstdio>
#include <numbers>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/runtime/logging.h>
#include <ctrainer/trainer/runtime/output_dir.h>
#include <ctrainer/trainer/trainer.h>

namespace {

/// Points on `classes` interleaved spiral arms with Gaussian noise; label = arm.
std::shared_ptr<ctrainer::TensorDataset> make_spirals(int64_t n, int64_t classes, double noise,
                                                      uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor labels = at::arange(n, at::kLong).remainder(classes);
  at::Tensor radius = at::rand({n}, gen, at::kFloat);
  at::Tensor angle = labels.to(at::kFloat) * (2 * std::numbers::pi / classes) + radius * 4.0 +
                     noise * at::randn({n}, gen, at::kFloat);
  at::Tensor x = at::stack({radius * at::cos(angle), radius * at::sin(angle)}, 1);
  return std::make_shared<ctrainer::TensorDataset>(
      std::map<std::string, at::Tensor>{{"x", x}, {"labels", labels}});
}

ctrainer::Metrics accuracy(const ctrainer::EvalPrediction& p) {
  auto correct = p.predictions.argmax(-1).eq(p.label_ids).to(at::kDouble);
  return {{"accuracy", correct.mean().item<double>()}};
}

/// Data and model settings of this example (flags next to the TrainingArguments ones).
struct ExampleOptions {
  int64_t num_train_examples = 3000;
  int64_t num_eval_examples = 600;
  int64_t num_classes = 3;
  int64_t hidden_size = 64;
  int64_t num_hidden_layers = 2;
  double dropout = 0.0;
  double noise = 0.05;

  void register_flags(ctrainer::ArgumentParser& parser) {
    parser.add_option("num_train_examples", &num_train_examples, "Training points to generate.");
    parser.add_option("num_eval_examples", &num_eval_examples, "Evaluation points to generate.");
    parser.add_option("num_classes", &num_classes, "Number of spiral arms (classes).");
    parser.add_option("hidden_size", &hidden_size, "Width of the hidden layers.");
    parser.add_option("num_hidden_layers", &num_hidden_layers, "Number of hidden layers.");
    parser.add_option("dropout", &dropout, "Dropout probability before the classifier.");
    parser.add_option("noise", &noise, "Standard deviation of the angular noise.");
  }

  void validate() const {
    auto at_least = [](const char* flag, int64_t v, int64_t min) {
      if (v < min)
        throw ctrainer::ArgumentError(std::string("--") + flag + " must be >= " +
                                      std::to_string(min) + ", got " + std::to_string(v));
    };
    at_least("num_train_examples", num_train_examples, 1);
    at_least("num_eval_examples", num_eval_examples, 1);
    at_least("num_classes", num_classes, 2);
    at_least("hidden_size", hidden_size, 1);
    at_least("num_hidden_layers", num_hidden_layers, 1);
    if (dropout < 0 || dropout >= 1) throw ctrainer::ArgumentError("--dropout must be in [0, 1)");
    if (noise < 0) throw ctrainer::ArgumentError("--noise must be >= 0");
  }
};

int run(ctrainer::TrainingArguments args, const ExampleOptions& opt) {
  if (!args.do_train && !args.do_eval && !args.do_predict)
    throw ctrainer::ArgumentError("nothing to do: pass --do_train, --do_eval and/or --do_predict");
  // Like run_glue: the main process logs at info level unless --log_level says otherwise.
  ctrainer::logging::set_verbosity(spdlog::level::info);
  if (auto last = ctrainer::check_output_dir(args)) {
    ctrainer::logging::logger()->info(
        "Checkpoint detected, resuming training at {}. To avoid this, change --output_dir or add "
        "--overwrite_output_dir to train from scratch.",
        *last);
    args.resume_from_checkpoint = *last;
  }

  const auto seed = static_cast<uint64_t>(args.seed);
  auto train = make_spirals(opt.num_train_examples, opt.num_classes, opt.noise, seed);
  auto eval = make_spirals(opt.num_eval_examples, opt.num_classes, opt.noise, seed + 1);
  torch::manual_seed(seed);
  auto model = std::make_shared<ctrainer::MLPClassifier>(2, opt.hidden_size, opt.num_classes,
                                                         opt.dropout, opt.num_hidden_layers);
  ctrainer::Trainer trainer(
      model, args, {.train_dataset = train, .eval_dataset = eval, .compute_metrics = accuracy});
  // HF's log_metrics / save_metrics: on the world's main process only, so several processes do
  // not write the same files.
  const auto report = [&](const std::string& split, const ctrainer::Metrics& metrics) {
    trainer.log_metrics(split, metrics);
    trainer.save_metrics(split, metrics);
  };
  if (args.do_train) report("train", trainer.train().metrics);
  if (args.do_eval) report("eval", trainer.evaluate());
  if (args.do_predict) report("predict", trainer.predict(eval, "predict").metrics);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ExampleOptions options;
  ctrainer::ArgumentParser parser(
      "Train an MLP classifier on generated spirals with ctrainer's Trainer.");
  options.register_flags(parser);
  ctrainer::TrainingArguments args = ctrainer::parse_args_or_exit(parser, argc, argv);
  return ctrainer::run_reporting_errors([&] {
    options.validate();
    return run(args, options);
  });
}
