#pragma once
// What run_clm and run_mlm do alike, as HF's two scripts do it: the process set-up (logging,
// resuming from output_dir's last checkpoint, the seed), the train and validation texts (a
// validation file, or the train file's first --validation_split_percentage percent), and the
// train / save / evaluate (with perplexity) sequence with HF's result files.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/data/collator.h>
#include <ctrainer/trainer/data/dataset.h>

#include "lm_arguments.h"
#include "lm_model.h"

namespace run_lm {

/// Logging at info on the main process, resuming at output_dir's last checkpoint (HF's
/// "Checkpoint detected" rule), and set_seed(args.seed) before any model is made.
void start_run(ctrainer::TrainingArguments& args);

/// {train texts, validation texts} of the data flags; .txt lines keep their line breaks when
/// `keep_linebreaks`.
std::pair<std::vector<std::string>, std::vector<std::string>> read_texts(const DataArguments& data,
                                                                         bool keep_linebreaks);

/// The datasets of a run: train with --do_train, eval with --do_eval.
struct LmDatasets {
  std::shared_ptr<ctrainer::Dataset> train, eval;
};

/// Throws ctrainer::ArgumentError when --do_eval has no validation texts.
void require_validation_texts(const ctrainer::TrainingArguments& args,
                              const std::vector<std::string>& eval_texts);

/// Trains (then saves the model and tokenizer into output_dir, train_results.json with
/// train_samples, trainer_state.json) and evaluates (eval_results.json with eval_samples and
/// perplexity = exp(eval_loss)) as the do_* flags ask; with --merge_lora also output_dir/merged
/// (and its tokenizer). Returns the exit code.
int train_and_evaluate(const ctrainer::TrainingArguments& args, const LmModel& lm,
                       const LmDatasets& data, std::shared_ptr<ctrainer::DataCollator> collator,
                       const ctrainer::LoraArguments& lora);

}  // namespace run_lm
