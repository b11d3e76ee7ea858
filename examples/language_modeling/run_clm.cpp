// run_clm: trains or fine-tunes a causal language model (GPT-2, Llama) on text files, the C++
// counterpart of transformers' examples/pytorch/language-modeling/run_clm.py: the same flags,
// data handling (line examples, group_texts blocks, validation split) and output files.
//
//   run_clm --model_type gpt2 --config_overrides n_embd=256,n_layer=4,n_head=4,vocab_size=8192 \
//           --tokenizer_name examples/data/text/kjv-bpe-8k \
//           --train_file examples/data/text/kjv.txt --block_size 256 \
//           --output_dir out --do_train --do_eval
//
// Outputs in --output_dir, like HF: the model (config.json, model.safetensors) and tokenizer
// files, train_results.json, eval_results.json (eval_loss and perplexity = exp(eval_loss)),
// all_results.json, trainer_state.json. HF's eval_accuracy is not computed: it needs
// preprocess_logits_for_metrics, which ctrainer's Trainer does not have yet.
#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/runtime/logging.h>

#include "lm_arguments.h"
#include "lm_datasets.h"
#include "lm_model.h"
#include "lm_run.h"

namespace run_lm {
namespace {

int run(ctrainer::TrainingArguments args, const LmArguments& lm_args) {
  start_run(args);
  const DataArguments& data = lm_args.data;
  const auto [train_texts, eval_texts] = read_texts(data, data.keep_linebreaks);
  require_validation_texts(args, eval_texts);
  const LmModel lm = load_lm_model(lm_args.model, ctrainer::ModelTask::kCausalLM);
  lm_args.lora.attach(*lm.model, "CAUSAL_LM", lm_args.model.model_name_or_path);
  const int64_t block_size = resolve_block_size(data.block_size, lm);
  ctrainer::logging::logger()->info("Grouping texts in chunks of {}", block_size);
  LmDatasets datasets;
  if (args.do_train)
    datasets.train =
        group_texts(train_texts, *lm.tokenizer, block_size, "train", data.max_train_samples);
  if (args.do_eval)
    datasets.eval =
        group_texts(eval_texts, *lm.tokenizer, block_size, "validation", data.max_eval_samples);
  // The blocks are whole: the default collator stacks them, as run_clm.py's default_data_collator.
  return train_and_evaluate(args, lm, datasets, nullptr, lm_args.lora);
}

}  // namespace
}  // namespace run_lm

int main(int argc, char** argv) {
  run_lm::LmArguments lm_args;
  ctrainer::ArgumentParser parser(
      "Train or fine-tune a causal language model on text files (HF run_clm.py flags).");
  lm_args.register_flags(parser);
  ctrainer::TrainingArguments args = ctrainer::parse_args_or_exit(parser, argc, argv);
  return ctrainer::run_reporting_errors([&] {
    lm_args.validate(args);
    return run_lm::run(args, lm_args);
  });
}
