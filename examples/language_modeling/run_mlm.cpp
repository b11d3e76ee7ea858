// run_mlm: trains or fine-tunes a masked language model (BERT) on text files, the C++
// counterpart of transformers' examples/pytorch/language-modeling/run_mlm.py: the same flags,
// data handling (texts grouped into max_seq_length examples, or --line_by_line), masking
// (DataCollatorForLanguageModeling, 80/10/10; --whole_word_mask) and output files.
//
//     run_mlm --model_type bert --config_overrides hidden_size=128,num_hidden_layers=2,\
//num_attention_heads=2,intermediate_size=512 --tokenizer_name examples/data/vocab \
//           --train_file examples/data/text/kjv.txt --max_seq_length 128 \
//           --output_dir out --do_train --do_eval
//
// Outputs in --output_dir, like HF: the model and tokenizer files, train_results.json,
// eval_results.json (eval_loss and perplexity = exp(eval_loss)), all_results.json,
// trainer_state.json. HF's eval_accuracy is not computed: it needs preprocess_logits_for_metrics,
// which ctrainer's Trainer does not have yet. The masks are drawn per batch from --seed, the
// epoch and the batch's examples (so a resumed run masks as the uninterrupted one did), not
// from one generator stream as in HF.
#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/data/language_modeling_collator.h>

#include "lm_arguments.h"
#include "lm_datasets.h"
#include "lm_model.h"
#include "lm_run.h"

namespace run_lm {
namespace {

std::shared_ptr<ctrainer::DataCollator> masking_collator(const ctrainer::TrainingArguments& args,
                                                         const DataArguments& data,
                                                         const ctrainer::Tokenizer& tokenizer) {
  ctrainer::LanguageModelingCollatorOptions options;
  options.mlm_probability = data.mlm_probability;
  options.whole_word_mask = data.whole_word_mask;
  const ctrainer::SpecialTokens special = tokenizer.special_tokens();
  auto id_of = [&](const std::optional<std::string>& token) -> std::optional<int64_t> {
    return token ? tokenizer.token_to_id(*token) : std::nullopt;
  };
  options.pad_token_id = id_of(special.pad);
  options.mask_token_id = id_of(special.mask);
  options.pad_left = tokenizer.padding_side() == ctrainer::Side::kLeft;
  options.vocabulary_size = tokenizer.vocab_size();
  for (const auto& token :
       {special.pad, special.unk, special.cls, special.sep, special.mask, special.bos, special.eos})
    if (auto id = id_of(token)) options.special_token_ids.push_back(*id);
  options.seed = static_cast<uint64_t>(args.seed);
  // run_mlm.py: multiples of 8 for fp16 tensor cores when line_by_line examples are padded.
  if (data.line_by_line && args.fp16 && !data.pad_to_max_length) options.pad_to_multiple_of = 8;
  return std::make_shared<ctrainer::DataCollatorForLanguageModeling>(options);
}

int run(ctrainer::TrainingArguments args, const LmArguments& lm_args) {
  start_run(args);
  const DataArguments& data = lm_args.data;
  // datasets' text loader without keep_linebreaks, as run_mlm.py loads text files.
  const auto [train_texts, eval_texts] = read_texts(data, /*keep_linebreaks=*/false);
  require_validation_texts(args, eval_texts);
  const LmModel lm = load_lm_model(lm_args.model, ctrainer::ModelTask::kMaskedLM);
  // PEFT has no masked-LM task type: the adapter config says none, as PeftModel's does.
  lm_args.lora.attach(*lm.model, "", lm_args.model.model_name_or_path);
  const MlmTokenization tokenization{
      .max_seq_length = resolve_max_seq_length(data.max_seq_length, lm),
      .line_by_line = data.line_by_line,
      .pad_to_max_length = data.pad_to_max_length,
      .offsets = data.whole_word_mask};
  LmDatasets datasets;
  if (args.do_train)
    datasets.train =
        mlm_examples(train_texts, *lm.tokenizer, tokenization, "train", data.max_train_samples);
  if (args.do_eval)
    datasets.eval =
        mlm_examples(eval_texts, *lm.tokenizer, tokenization, "validation", data.max_eval_samples);
  return train_and_evaluate(args, lm, datasets, masking_collator(args, data, *lm.tokenizer),
                            lm_args.lora);
}

}  // namespace
}  // namespace run_lm

int main(int argc, char** argv) {
  run_lm::LmArguments lm_args;
  lm_args.masked = true;
  ctrainer::ArgumentParser parser(
      "Train or fine-tune a masked language model on text files (HF run_mlm.py flags).");
  lm_args.register_flags(parser);
  ctrainer::TrainingArguments args = ctrainer::parse_args_or_exit(parser, argc, argv);
  return ctrainer::run_reporting_errors([&] {
    lm_args.validate(args);
    return run_lm::run(args, lm_args);
  });
}
