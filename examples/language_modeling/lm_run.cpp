#include "lm_run.h"

#include <cmath>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/trainer/runtime/logging.h>
#include <ctrainer/trainer/runtime/output_dir.h>
#include <ctrainer/trainer/runtime/sagemaker_outputs.h>
#include <ctrainer/trainer/runtime/seed.h>
#include <ctrainer/trainer/trainer.h>

#include "lm_datasets.h"

namespace run_lm {

using ctrainer::Metrics;

void start_run(ctrainer::TrainingArguments& args) {
  ctrainer::logging::set_verbosity(spdlog::level::info);
  ctrainer::logging::setup(args, ctrainer::ProcessInfo::from_environment(args.local_rank));
  ctrainer::resume_from_detected_checkpoint(args);
  ctrainer::set_seed(args.seed);  // before the model is initialised, as HF's set_seed
}

std::pair<std::vector<std::string>, std::vector<std::string>> read_texts(const DataArguments& data,
                                                                         bool keep_linebreaks) {
  std::vector<std::string> train, validation;
  if (!data.train_file.empty()) train = read_text_examples(data.train_file, keep_linebreaks);
  if (!data.validation_file.empty()) {
    validation = read_text_examples(data.validation_file, keep_linebreaks);
  } else if (!train.empty()) {
    std::tie(validation, train) =
        split_validation(std::move(train), data.validation_split_percentage);
  }
  return {std::move(train), std::move(validation)};
}

void require_validation_texts(const ctrainer::TrainingArguments& args,
                              const std::vector<std::string>& eval_texts) {
  if (args.do_eval && eval_texts.empty())
    throw ctrainer::ArgumentError(
        "--do_eval requires a validation dataset: give --validation_file, or a "
        "--validation_split_percentage above 0 that leaves the train file's first lines to it");
}

int train_and_evaluate(const ctrainer::TrainingArguments& args, const LmModel& lm,
                       const LmDatasets& data, std::shared_ptr<ctrainer::DataCollator> collator,
                       const ctrainer::LoraArguments& lora) {
  ctrainer::Trainer trainer(lm.model, args,
                            {.train_dataset = data.train,
                             .eval_dataset = data.eval,
                             .data_collator = std::move(collator)});
  if (args.do_train) {
    ctrainer::TrainOutput result = trainer.train();
    trainer.save_model(args.output_dir);
    if (trainer.process().is_world_process_zero()) lm.tokenizer->save_pretrained(args.output_dir);
    if (auto merged =
            lora.save_merged(*lm.model, args.output_dir, trainer.process().is_world_process_zero()))
      lm.tokenizer->save_pretrained(*merged);
    Metrics metrics = result.metrics;
    metrics["train_samples"] = static_cast<double>(data.train->size());
    trainer.log_metrics("train", metrics);
    trainer.save_metrics("train", metrics);
    trainer.save_state();
  }
  if (args.do_eval) {
    ctrainer::logging::logger()->info("*** Evaluate ***");
    Metrics metrics = trainer.evaluate();
    metrics["eval_samples"] = static_cast<double>(data.eval->size());
    // Python's math.exp overflows into OverflowError, which run_*.py turn into inf; so does exp.
    metrics["perplexity"] = std::exp(metrics.at("eval_loss"));
    trainer.log_metrics("eval", metrics);
    trainer.save_metrics("eval", metrics);
  }
  ctrainer::publish_sagemaker_outputs(args);  // a no-op outside SageMaker
  return 0;
}

}  // namespace run_lm
