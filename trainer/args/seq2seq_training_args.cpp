#include <ctrainer/trainer/args/seq2seq_training_args.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher_error_file.h>

namespace ctrainer {

void Seq2SeqTrainingArguments::validate() {
  TrainingArguments::validate();
  check_seq2seq_fields();
}

void Seq2SeqTrainingArguments::check_seq2seq_fields() const {
  if (generation_max_length && *generation_max_length < 1)
    throw ArgumentError("--generation_max_length must be at least 1, got " +
                        std::to_string(*generation_max_length));
  if (generation_num_beams && *generation_num_beams < 1)
    throw ArgumentError("--generation_num_beams must be at least 1, got " +
                        std::to_string(*generation_num_beams));
  if (generation_config && !std::filesystem::exists(*generation_config))
    throw ArgumentError("--generation_config " + *generation_config +
                        ": no such file or folder (give a generation_config.json or a folder "
                        "holding one; ctrainer reaches no model hub)");
  // Both orders below decide the whole train order; accepting both would silently drop one.
  if (sortish_sampler && train_sampling_strategy != TrainSamplingStrategy::kRandom)
    throw ArgumentError(
        "--sortish_sampler orders the train set itself, so it needs --train_sampling_strategy "
        "random (the default); drop one of the two (--group_by_length also sets the strategy)");
}

void add_seq2seq_options(ArgumentParser& parser, Seq2SeqTrainingArguments& args) {
  parser.set_option_group("Seq2SeqTrainingArguments");
  parser.add_option("sortish_sampler", &args.sortish_sampler,
                    "Train in sortish order: examples sorted by input length within random "
                    "chunks of 50 batches, the batches then shuffled (the longest first). "
                    "transformers 5 accepts and ignores this flag; ctrainer applies it.");
  parser.add_option("predict_with_generate", &args.predict_with_generate,
                    "evaluate and predict generate with the model: the predictions are the "
                    "generated ids (for generative metrics such as ROUGE and BLEU), the loss is "
                    "still reported.");
  parser.add_option("generation_max_length", &args.generation_max_length,
                    "max_length of the generation in evaluate and predict with "
                    "predict_with_generate. Default: the generation config's.");
  parser.add_option("generation_num_beams", &args.generation_num_beams,
                    "num_beams of the generation in evaluate and predict with "
                    "predict_with_generate. Default: the generation config's.");
  parser.add_option("generation_config", &args.generation_config,
                    "A generation_config.json, or a folder holding one, that replaces the "
                    "model's generation config in evaluate and predict.");
  parser.set_option_group("application");
}

void parse_seq2seq_args_or_exit(ArgumentParser& parser, int argc, char** argv,
                                Seq2SeqTrainingArguments& args) {
  add_seq2seq_options(parser, args);
  try {
    if (!parser.parse(argc, argv, args)) {
      std::cout.flush();
      std::exit(0);
    }
    args.check_seq2seq_fields();
  } catch (const ArgumentError& e) {
    std::cerr << "error: " << e.what() << std::endl;
    record_error_for_launcher(e.what());
    std::exit(2);
  }
}

nlohmann::json to_json(const Seq2SeqTrainingArguments& args) {
  nlohmann::json out = to_json(static_cast<const TrainingArguments&>(args));
  out["sortish_sampler"] = args.sortish_sampler;
  out["predict_with_generate"] = args.predict_with_generate;
  auto optional = [](const auto& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  out["generation_max_length"] = optional(args.generation_max_length);
  out["generation_num_beams"] = optional(args.generation_num_beams);
  out["generation_config"] = optional(args.generation_config);
  return out;
}

}  // namespace ctrainer
