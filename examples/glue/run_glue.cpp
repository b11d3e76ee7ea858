// run_glue: fine-tunes (or trains from scratch) a BERT sequence classifier on a GLUE task, the
// C++ counterpart of transformers' examples/pytorch/text-classification/run_glue.py: the same
// flags, metrics and output files.
//
//   run_glue --task_name sst2 --data_dir examples/data/glue/SST-2 \
//            --model_name_or_path my-bert --output_dir out --do_train --do_eval
//
// Outputs in --output_dir, like HF: the final model (config.json, model.safetensors, vocab.txt,
// tokenizer_config.json), train_results.json, eval_results.json (MNLI: with the mismatched
// metrics suffixed _mm), all_results.json, trainer_state.json, predict_results_<task>.txt.
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/examples/glue/glue_metrics.h>
#include <ctrainer/examples/glue/glue_reader.h>
#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/data/padding_collator.h>
#include <ctrainer/trainer/plot/training_curves.h>
#include <ctrainer/trainer/runtime/logging.h>
#include <ctrainer/trainer/runtime/output_dir.h>
#include <ctrainer/trainer/runtime/sagemaker_outputs.h>
#include <ctrainer/trainer/runtime/seed.h>
#include <ctrainer/trainer/trainer.h>

#include "glue_arguments.h"
#include "glue_data.h"
#include "glue_model.h"

namespace run_glue {
namespace {
namespace fs = std::filesystem;
using ctrainer::Metrics;

/// predict_results_<task>.txt in GLUE's submission format: "index\tprediction", the label as the
/// task's files write it (0/1, entailment, ...) or the score with 3 decimals for STS-B.
/// `model_to_task` maps the model's class ids back to the task's (empty: identity).
void write_predictions(const std::string& path, const ctrainer::glue::GlueTask& task,
                       const at::Tensor& predictions, const std::vector<int64_t>& model_to_task) {
  std::ofstream out(path);
  out << "index\tprediction\n";
  if (task.is_regression()) {
    const at::Tensor scores = predictions.reshape({-1}).to(at::kDouble).contiguous();
    const double* s = scores.data_ptr<double>();
    for (int64_t i = 0; i < scores.numel(); ++i) out << fmt::format("{}\t{:3.3f}\n", i, s[i]);
  } else {
    const at::Tensor ids = predictions.argmax(1).contiguous();
    const int64_t* id = ids.data_ptr<int64_t>();
    for (int64_t i = 0; i < ids.numel(); ++i) {
      const auto model_id = static_cast<size_t>(id[i]);
      const auto task_id =
          model_to_task.empty() ? model_id : static_cast<size_t>(model_to_task[model_id]);
      out << i << '\t' << task.label_values.at(task_id) << '\n';
    }
  }
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + path);
}

int run(ctrainer::TrainingArguments args, const GlueArguments& glue_args) {
  // Like run_glue.py: the main process logs at info level unless --log_level says otherwise.
  ctrainer::logging::set_verbosity(spdlog::level::info);
  // And, as its log_level = training_args.get_process_log_level(), from the first line: each
  // line carries this process's rank, and replicas log at --log_level_replica. (Until the
  // Trainer set this up, every process logged the model and data lines at info, as "rank 0".)
  ctrainer::logging::setup(args, ctrainer::ProcessInfo::from_environment(args.local_rank));
  auto log = ctrainer::logging::logger();
  ctrainer::resume_from_detected_checkpoint(args);
  const auto& task = ctrainer::glue::glue_task(glue_args.data.task_name);
  // Seed before the model is initialised, as HF's set_seed does.
  ctrainer::set_seed(args.seed);

  ModelBundle bundle = load_model_and_tokenizer(glue_args.model, task);
  glue_args.lora.attach(*bundle.model, "SEQ_CLS", glue_args.model.model_name_or_path);
  // Found here rather than as an index error in the first forward (HF's run_glue fails there).
  if (const std::optional<int64_t> limit = bundle.config->max_positions();
      limit && glue_args.data.max_seq_length > *limit)
    throw ctrainer::ArgumentError(
        "--max_seq_length " + std::to_string(glue_args.data.max_seq_length) +
        " exceeds the model's max_position_embeddings " + std::to_string(*limit) +
        " (its config.json): use --max_seq_length " + std::to_string(*limit) + " or less");
  GlueDatasets data = load_glue_datasets(glue_args.data, args, task, bundle);

  std::shared_ptr<ctrainer::DataCollator> collator;
  if (!glue_args.data.pad_to_max_length)
    collator = std::make_shared<ctrainer::DataCollatorWithPadding>(
        ctrainer::PaddingCollatorOptions{.pad_token_id = bundle.tokenizer->pad_id()});
  auto compute_metrics = [&task](const ctrainer::EvalPrediction& p) -> Metrics {
    return ctrainer::metrics::glue_metrics(task.name, p.predictions, p.label_ids);
  };
  ctrainer::Trainer trainer(
      bundle.model, args,
      {.train_dataset = data.train,
       .eval_dataset = data.eval.empty() ? nullptr : data.eval.front().dataset,
       .data_collator = collator,
       .compute_metrics = compute_metrics});

  if (args.do_train) {
    ctrainer::TrainOutput result = trainer.train();
    Metrics metrics = result.metrics;
    metrics["train_samples"] = static_cast<double>(data.train->size());
    save_final_model(trainer, bundle, args.output_dir);
    if (auto merged = glue_args.lora.save_merged(*bundle.model, args.output_dir,
                                                 trainer.process().is_world_process_zero()))
      bundle.tokenizer->save_pretrained(*merged);
    trainer.log_metrics("train", metrics);
    trainer.save_metrics("train", metrics);
    trainer.save_state();
  }

  if (args.do_eval) {
    log->info("*** Evaluate ***");
    Metrics combined;
    for (const auto& split : data.eval) {
      Metrics metrics = trainer.evaluate(split.dataset);
      metrics["eval_samples"] = static_cast<double>(split.dataset->size());
      if (split.metric_suffix.empty()) {
        combined.insert(metrics.begin(), metrics.end());
      } else {
        for (const auto& [key, value] : metrics) combined[key + split.metric_suffix] = value;
      }
    }
    trainer.log_metrics("eval", combined);
    trainer.save_metrics("eval", combined);
  }

  if (args.do_predict) {
    log->info("*** Predict ***");
    std::vector<int64_t> model_to_task(bundle.task_to_model_label.size());
    for (size_t t = 0; t < bundle.task_to_model_label.size(); ++t)
      model_to_task[static_cast<size_t>(bundle.task_to_model_label[t])] = static_cast<int64_t>(t);
    for (const auto& split : data.test) {
      ctrainer::PredictionOutput output = trainer.predict(split.dataset, "predict");
      if (!trainer.process().is_world_process_zero()) continue;
      const std::string path =
          (fs::path(args.output_dir) / ("predict_results_" + split.name + ".txt")).string();
      log->info("***** Predict results {} *****", split.name);
      write_predictions(path, task, output.predictions, model_to_task);
    }
  }
  return 0;
}

}  // namespace

/// --plot: output_dir/training_curves.svg from the trainer_state.json the run wrote.
void write_training_curves(const ctrainer::TrainingArguments& args) {
  if (!ctrainer::ProcessInfo::from_environment(args.local_rank).is_world_process_zero()) return;
  const fs::path state = fs::path(args.output_dir) / "trainer_state.json";
  auto log = ctrainer::logging::logger();
  if (!fs::exists(state)) {
    log->warn("--plot: no {} (it is written by --do_train), so no curves to draw", state.string());
    return;
  }
  const fs::path path = fs::path(args.output_dir) / "training_curves.svg";
  std::ofstream out(path, std::ios::binary);
  out << ctrainer::training_curves_svg({ctrainer::read_run_history(state.string())});
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + path.string());
  log->info("Training curves written to {}", path.string());
}

}  // namespace run_glue

int main(int argc, char** argv) {
  run_glue::GlueArguments glue_args;
  ctrainer::ArgumentParser parser(
      "Fine-tune or train a BERT sequence classifier on a GLUE task (HF run_glue.py flags).");
  glue_args.register_flags(parser);
  ctrainer::TrainingArguments args = ctrainer::parse_args_or_exit(parser, argc, argv);
  return ctrainer::run_reporting_errors([&] {
    const ctrainer::EnvironmentMap environment = ctrainer::process_environment();
    glue_args.apply_sagemaker_channels(environment);
    glue_args.validate(args);
    const int code = run_glue::run(args, glue_args);
    if (glue_args.plot) run_glue::write_training_curves(args);
    ctrainer::publish_sagemaker_outputs(args, environment);
    return code;
  });
}
