#pragma once
/// \file Seq2SeqTrainingArguments: TrainingArguments plus the five fields of transformers'
/// Seq2SeqTrainingArguments, which Seq2SeqTrainer reads (predict_with_generate and the
/// generation settings of evaluate / predict, sortish_sampler for training).
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {

/// transformers' Seq2SeqTrainingArguments: same names, same defaults.
struct Seq2SeqTrainingArguments : TrainingArguments {
  /// Train in sortish order: examples sorted by input length within random chunks of 50
  /// batches, then the batches shuffled, the one holding the longest example first (the
  /// SortishSampler of transformers' seq2seq examples, seeded as our other samplers).
  /// transformers 5 accepts this field and no longer reads it; ctrainer does what it says.
  bool sortish_sampler = false;
  /// evaluate() and predict() generate with the model and return the generated ids as the
  /// predictions (padded to the generation config's max_length), and still report the loss.
  bool predict_with_generate = false;
  /// max_length of the generation in evaluate() / predict() (default: the generation config's).
  std::optional<int64_t> generation_max_length;
  /// num_beams of the generation in evaluate() / predict() (default: the generation config's).
  std::optional<int64_t> generation_num_beams;
  /// A generation_config.json, or a folder holding one, that replaces the model's generation
  /// config (transformers: a hub id too; none is reachable here).
  std::optional<std::string> generation_config;

  /// TrainingArguments::validate(), then check_seq2seq_fields().
  void validate();
  /// The Seq2Seq fields alone: positive generation_max_length and generation_num_beams, a
  /// generation_config that exists, sortish_sampler with the random train order only. Throws
  /// ArgumentError naming the flag.
  void check_seq2seq_fields() const;
};

/// Adds the Seq2Seq flags to `parser`, bound to `args` (shown under their own --help heading and
/// accepted as JSON config keys), so that parser.parse(argc, argv, args) fills all of `args`.
void add_seq2seq_options(ArgumentParser& parser, Seq2SeqTrainingArguments& args);

/// For main(), as parse_args_or_exit: add_seq2seq_options(parser, args), parse into `args`, then
/// check_seq2seq_fields(). --help prints and exits with 0; an ArgumentError is printed and exits
/// with 2. `args` must outlive `parser`'s use.
void parse_seq2seq_args_or_exit(ArgumentParser& parser, int argc, char** argv,
                                Seq2SeqTrainingArguments& args);

/// to_json(TrainingArguments) plus the Seq2Seq fields (training_args.json of a Seq2SeqTrainer).
nlohmann::json to_json(const Seq2SeqTrainingArguments& args);

}  // namespace ctrainer
