#pragma once
// What run_summarization and run_translation do alike, as HF's two scripts do it: the model and
// tokenizer, the tokenized pairs, Seq2SeqTrainer's train / evaluate / predict with HF's result
// files and generated_predictions.txt. The two programs differ in how they read pairs and in
// their metric (Seq2SeqTask).
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ctrainer/models/tokenizers/tokenizer.h>
#include <ctrainer/trainer/args/seq2seq_training_args.h>
#include <ctrainer/trainer/callbacks/trainer_callback.h>
#include <ctrainer/trainer/data/dataset.h>

#include "seq2seq_arguments.h"

namespace run_seq2seq {

/// Sources and targets of one split.
using Pairs = std::vector<std::pair<std::string, std::string>>;

/// The task-specific parts: how a split's file becomes pairs, and the metrics of decoded
/// predictions against decoded references (both stripped, as HF's postprocess_text).
struct Seq2SeqTask {
  std::function<Pairs(const std::string& path)> read_pairs;
  std::function<ctrainer::Metrics(const std::vector<std::string>& predictions,
                                  const std::vector<std::string>& references)>
      metrics;
};

/// Examples of "input_ids", "attention_mask" and "labels" (1-D, each of its own length unless
/// padded to the maximal lengths); lengths() are the sources' (sortish_sampler, group_by_length).
class PairDataset : public ctrainer::Dataset {
 public:
  struct Row {
    std::vector<int64_t> input_ids, attention_mask, labels;
  };
  explicit PairDataset(std::vector<Row> rows) : rows_(std::move(rows)) {}
  int64_t size() const override { return static_cast<int64_t>(rows_.size()); }
  ctrainer::Example get(int64_t index) const override;
  std::optional<std::vector<int64_t>> lengths() const override;

 private:
  std::vector<Row> rows_;
};

/// HF's preprocess_function: sources with the prefix, truncated to max_source_length, targets to
/// `max_target_length`; with pad_to_max_length padded to those lengths (label padding -100
/// with ignore_pad_token_for_loss). Pairs with an empty source or target are dropped, as the
/// summarization script drops them.
std::shared_ptr<PairDataset> tokenize_pairs(const Pairs& pairs,
                                            const ctrainer::Tokenizer& tokenizer,
                                            const DataArguments& data, int64_t max_target_length);

/// The whole run: model, tokenizer, data, Seq2SeqTrainer, result files. Returns the exit code.
int run(Seq2SeqArguments& arguments, ctrainer::Seq2SeqTrainingArguments& args,
        const Seq2SeqTask& task);

}  // namespace run_seq2seq
