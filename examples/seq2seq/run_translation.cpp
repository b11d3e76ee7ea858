// run_translation: HF's examples/pytorch/translation/run_translation.py in C++. Fine-tunes (or
// trains from a config) an encoder-decoder on JSON lines of {"translation": {src: ..., tgt:
// ...}} with Seq2SeqTrainer, evaluates and predicts with generation, and reports sacreBLEU's
// corpus BLEU and gen_len, as the script does.
#include <ctrainer/examples/seq2seq/metrics/bleu.h>
#include <ctrainer/trainer/args/seq2seq_training_args.h>

#include "seq2seq_files.h"
#include "seq2seq_run.h"

namespace {

ctrainer::Metrics bleu_metrics(const std::vector<std::string>& predictions,
                               const std::vector<std::string>& references) {
  // The script: metric.compute(predictions, references=[[label] ...]) -> {"bleu": score}.
  return {{"bleu", ctrainer::text_metrics::corpus_bleu(predictions, {references}).score}};
}

}  // namespace

int main(int argc, char** argv) {
  run_seq2seq::Seq2SeqArguments arguments;
  arguments.task = run_seq2seq::Task::kTranslation;
  ctrainer::ArgumentParser parser(
      "Fine-tunes an encoder-decoder (T5, BART) for translation on JSON lines files with "
      "Seq2SeqTrainer, as transformers' run_translation.py (sacreBLEU).");
  arguments.register_flags(parser);
  ctrainer::Seq2SeqTrainingArguments args;
  ctrainer::parse_seq2seq_args_or_exit(parser, argc, argv, args);
  return ctrainer::run_reporting_errors([&] {
    const run_seq2seq::Seq2SeqTask task{[&](const std::string& path) {
                                          return run_seq2seq::read_translation_pairs(
                                              path, arguments.data.source_lang,
                                              arguments.data.target_lang);
                                        },
                                        bleu_metrics};
    return run_seq2seq::run(arguments, args, task);
  });
}
