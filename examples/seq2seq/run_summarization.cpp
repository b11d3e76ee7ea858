// run_summarization: HF's examples/pytorch/summarization/run_summarization.py in C++. Fine-tunes
// (or trains from a config) an encoder-decoder on (text, summary) pairs of CSV or JSON lines
// files with Seq2SeqTrainer, evaluates and predicts with generation, and reports ROUGE as the
// rouge_score package computes it (with its stemmer) and gen_len, as the script does.
#include <ctrainer/examples/seq2seq/metrics/rouge.h>
#include <ctrainer/trainer/args/seq2seq_training_args.h>

#include "seq2seq_files.h"
#include "seq2seq_run.h"

namespace {

using run_seq2seq::Pairs;

/// One sentence per line, as the script's nltk.sent_tokenize + "\n".join prepares texts for
/// rougeLsum. punkt's data cannot be downloaded here: a sentence ends at '.', '!' or '?' (with
/// any closing quotes or brackets) followed by white space.
std::string sentences_per_line(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] != '.' && text[i] != '!' && text[i] != '?') continue;
    size_t j = i + 1;
    while (j < text.size() &&
           (text[j] == '"' || text[j] == '\'' || text[j] == ')' || text[j] == ']'))
      out += text[j++];
    i = j - 1;
    if (j < text.size() && std::isspace(static_cast<unsigned char>(text[j]))) {
      while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j]))) ++j;
      if (j < text.size()) out += '\n';
      i = j - 1;
    }
  }
  return out;
}

Pairs read_summaries(const std::string& path, const run_seq2seq::DataArguments& data) {
  const run_seq2seq::TextTable table = run_seq2seq::read_table(path);
  if (table.columns.size() < 2 && (data.text_column.empty() || data.summary_column.empty()))
    throw ctrainer::ArgumentError(path +
                                  ": a summarization file needs a text and a summary "
                                  "column (give --text_column and --summary_column)");
  const size_t text = data.text_column.empty() ? 0 : table.column(data.text_column, path);
  const size_t summary = data.summary_column.empty() ? 1 : table.column(data.summary_column, path);
  Pairs pairs;
  for (const auto& row : table.rows)
    pairs.emplace_back(row[text].value_or(""), row[summary].value_or(""));
  return pairs;
}

ctrainer::Metrics rouge_metrics(const std::vector<std::string>& predictions,
                                const std::vector<std::string>& references) {
  std::vector<std::string> preds, refs;
  for (const auto& p : predictions) preds.push_back(sentences_per_line(p));
  for (const auto& r : references) refs.push_back(sentences_per_line(r));
  ctrainer::Metrics metrics;
  // The script: {key: round(value * 100, 4)} of the aggregated F-measures.
  for (const auto& [key, value] :
       ctrainer::text_metrics::rouge_corpus(preds, refs, /*use_stemmer=*/true))
    metrics[key] = value * 100.0;
  return metrics;
}

}  // namespace

int main(int argc, char** argv) {
  run_seq2seq::Seq2SeqArguments arguments;
  arguments.task = run_seq2seq::Task::kSummarization;
  ctrainer::ArgumentParser parser(
      "Fine-tunes an encoder-decoder (T5, BART) for summarization on CSV or JSON lines files "
      "with Seq2SeqTrainer, as transformers' run_summarization.py (ROUGE with stemming).");
  arguments.register_flags(parser);
  ctrainer::Seq2SeqTrainingArguments args;
  ctrainer::parse_seq2seq_args_or_exit(parser, argc, argv, args);
  return ctrainer::run_reporting_errors([&] {
    const run_seq2seq::Seq2SeqTask task{
        [&](const std::string& path) { return read_summaries(path, arguments.data); },
        rouge_metrics};
    return run_seq2seq::run(arguments, args, task);
  });
}
