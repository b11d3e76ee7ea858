// The closed sets of TrainingArguments as enums (trainer/args/choices.h): every table round-trips,
// bad names are refused naming the flag and the choices, and the parser, --help and to_json
// spell the values exactly as Hugging Face does.
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/choices.h>
#include <ctrainer/trainer/args/training_args.h>

#include "support/parse_args.h"

namespace ctrainer {
namespace training_args_choices_test {

using nlohmann::json;
using testing::parse_error;
using testing::parse_ok;
using testing::write_file;

/// Checks the table of E: names and values unique, and to_string -> parse_choice gives back
/// every value.
template <typename E>
void expect_table_round_trips(const std::string& flag) {
  SCOPED_TRACE(flag);
  std::set<std::string> names;
  std::set<E> values;
  std::vector<std::string> in_order;
  for (const Choice<E>& choice : ChoiceTable<E>::kChoices) {
    in_order.emplace_back(choice.name);
    EXPECT_TRUE(names.insert(std::string(choice.name)).second) << choice.name;
    EXPECT_TRUE(values.insert(choice.value).second) << choice.name;
    EXPECT_EQ(to_string(choice.value), choice.name);
    EXPECT_EQ(parse_choice<E>(to_string(choice.value), flag), choice.value);
    EXPECT_EQ(find_choice<E>(choice.name), choice.value);
    EXPECT_TRUE(is_choice(choice.value));
  }
  EXPECT_EQ(choice_names<E>(), in_order);
  // A value transformers knows but ctrainer lacks is never also a choice.
  for (std::string_view later : ChoiceTable<E>::kLater) {
    EXPECT_FALSE(find_choice<E>(later).has_value()) << later;
  }
}

TEST(Choices, EveryTableRoundTrips) {
  expect_table_round_trips<IntervalStrategy>("eval_strategy");
  expect_table_round_trips<SaveStrategy>("save_strategy");
  expect_table_round_trips<OptimizerName>("optim");
  expect_table_round_trips<SchedulerType>("lr_scheduler_type");
  expect_table_round_trips<LogLevel>("log_level");
  expect_table_round_trips<TrainSamplingStrategy>("train_sampling_strategy");
  expect_table_round_trips<HalfPrecisionBackend>("half_precision_backend");
  expect_table_round_trips<DdpBackend>("ddp_backend");
}

TEST(Choices, TablesHoldHuggingFacesNamesInHelpOrder) {
  using V = std::vector<std::string>;
  EXPECT_EQ(choice_names<IntervalStrategy>(), (V{"no", "steps", "epoch"}));
  EXPECT_EQ(choice_names<SaveStrategy>(), (V{"no", "steps", "epoch", "best"}));
  EXPECT_EQ(choice_names<OptimizerName>(),
            (V{"adamw_torch_fused", "adamw_torch", "adamw_hf", "sgd"}));
  EXPECT_EQ(choice_names<SchedulerType>(),
            (V{"linear", "cosine", "cosine_with_restarts", "polynomial", "constant",
               "constant_with_warmup", "inverse_sqrt", "cosine_with_min_lr",
               "cosine_warmup_with_min_lr", "warmup_stable_decay"}));
  EXPECT_EQ(choice_names<LogLevel>(),
            (V{"passive", "debug", "info", "warning", "error", "critical"}));
  EXPECT_EQ(choice_names<TrainSamplingStrategy>(), (V{"random", "sequential", "group_by_length"}));
  EXPECT_EQ(choice_names<HalfPrecisionBackend>(), (V{"auto", "apex", "cpu_amp"}));
  EXPECT_EQ(choice_names<DdpBackend>(), (V{"gloo", "nccl"}));
}

TEST(Choices, BadNameNamesTheFlagAndTheChoices) {
  const auto message = [](auto parse) -> std::string {
    try {
      parse();
    } catch (const NotSupportedYet& e) {
      ADD_FAILURE() << "a typo is not 'not supported yet': " << e.what();
    } catch (const ChoiceError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no ChoiceError";
    return "";
  };
  EXPECT_EQ(message([] { parse_choice<IntervalStrategy>("sometimes", "logging_strategy"); }),
            "--logging_strategy must be one of no, steps, epoch (got 'sometimes')");
  EXPECT_EQ(message([] { parse_choice<SaveStrategy>("Steps", "save_strategy"); }),
            "--save_strategy must be one of no, steps, epoch, best (got 'Steps')");
  EXPECT_EQ(message([] { parse_choice<OptimizerName>("adam", "optim"); }),
            "--optim must be one of adamw_torch_fused, adamw_torch, adamw_hf, sgd (got 'adam')");
  EXPECT_EQ(message([] { parse_choice<SchedulerType>("", "lr_scheduler_type"); }),
            "--lr_scheduler_type must be one of linear, cosine, cosine_with_restarts, polynomial, "
            "constant, constant_with_warmup, inverse_sqrt, cosine_with_min_lr, "
            "cosine_warmup_with_min_lr, warmup_stable_decay (got '')");
  EXPECT_EQ(message([] { parse_choice<LogLevel>("WARN", "log_level_replica"); }),
            "--log_level_replica must be one of passive, debug, info, warning, error, critical "
            "(got 'WARN')");
  EXPECT_EQ(message([] { parse_choice<TrainSamplingStrategy>("shuffled", "x"); }),
            "--x must be one of random, sequential, group_by_length (got 'shuffled')");
  EXPECT_EQ(message([] { parse_choice<HalfPrecisionBackend>("amp", "half_precision_backend"); }),
            "--half_precision_backend must be one of auto, apex, cpu_amp (got 'amp')");
  // The backends transformers has and ctrainer lacks are listed too.
  EXPECT_EQ(message([] { parse_choice<DdpBackend>("ucc", "ddp_backend"); }),
            "--ddp_backend must be one of gloo, nccl, mpi, xccl, hccl, cncl, mccl (got 'ucc')");
}

TEST(Choices, ValuesTransformersKnowAreNotSupportedYet) {
  const auto message = [](auto parse) -> std::string {
    try {
      parse();
    } catch (const NotSupportedYet& e) {
      return e.what();
    }
    ADD_FAILURE() << "no NotSupportedYet";
    return "";
  };
  EXPECT_EQ(message([] { parse_choice<OptimizerName>("adafactor", "optim"); }),
            "not supported yet: --optim adafactor (available: adamw_torch_fused, adamw_torch, "
            "adamw_hf, sgd)");
  EXPECT_EQ(message([] { parse_choice<LogLevel>("detail", "log_level_replica"); }),
            "not supported yet: --log_level_replica detail (available: passive, debug, info, "
            "warning, error, critical)");
  EXPECT_EQ(message([] { parse_choice<DdpBackend>("mpi", "ddp_backend"); }),
            "not supported yet: --ddp_backend mpi (use gloo or nccl)");
  for (std::string_view later : ChoiceTable<SchedulerType>::kLater) {
    EXPECT_THROW(parse_choice<SchedulerType>(later, "lr_scheduler_type"), NotSupportedYet);
  }
}

TEST(Choices, ToStringRefusesAValueOutsideTheTable) {
  EXPECT_FALSE(is_choice(static_cast<SaveStrategy>(4)));
  EXPECT_THROW(to_string(static_cast<SaveStrategy>(4)), std::invalid_argument);
}

// ---- the registry, --help and to_json read the tables ------------------------------------------

TEST(Choices, RegistryChoicesComeFromTheTables) {
  const auto choices_of = [](const std::string& flag) {
    const OptionSpec* spec = find_training_args_option(flag);
    EXPECT_NE(spec, nullptr) << flag;
    EXPECT_EQ(spec->kind, OptionKind::kEnum) << flag;
    return spec->choices;
  };
  EXPECT_EQ(choices_of("eval_strategy"), choice_names<IntervalStrategy>());
  EXPECT_EQ(choices_of("logging_strategy"), choice_names<IntervalStrategy>());
  EXPECT_EQ(choices_of("save_strategy"), choice_names<SaveStrategy>());
  EXPECT_EQ(choices_of("optim"), choice_names<OptimizerName>());
  EXPECT_EQ(choices_of("lr_scheduler_type"), choice_names<SchedulerType>());
  EXPECT_EQ(choices_of("log_level"), choice_names<LogLevel>());
  EXPECT_EQ(choices_of("log_level_replica"), choice_names<LogLevel>());
  EXPECT_EQ(choices_of("train_sampling_strategy"), choice_names<TrainSamplingStrategy>());
  EXPECT_EQ(choices_of("half_precision_backend"), choice_names<HalfPrecisionBackend>());
  EXPECT_EQ(choices_of("ddp_backend"), choice_names<DdpBackend>());
  EXPECT_TRUE(find_training_args_option("ddp_backend")->optional);

  const std::string help = ArgumentParser("test").help();
  EXPECT_NE(help.find("--save_strategy {no,steps,epoch,best}  (default: steps)"),
            std::string::npos);
  EXPECT_NE(
      help.find(
          "--optim {adamw_torch_fused,adamw_torch,adamw_hf,sgd}  (default: adamw_torch_fused)"),
      std::string::npos);
  EXPECT_NE(help.find("--ddp_backend {gloo,nccl}  (default: None)"), std::string::npos);
}

TEST(Choices, ToJsonWritesHuggingFacesNames) {
  TrainingArguments args;
  args.eval_strategy = IntervalStrategy::kEpoch;
  args.logging_strategy = IntervalStrategy::kNo;
  args.save_strategy = SaveStrategy::kBest;
  args.metric_for_best_model = "accuracy";
  args.optim = OptimizerName::kAdamWHf;
  args.lr_scheduler_type = SchedulerType::kCosineWithRestarts;
  args.log_level = LogLevel::kDebug;
  args.log_level_replica = LogLevel::kCritical;
  args.train_sampling_strategy = TrainSamplingStrategy::kSequential;
  args.half_precision_backend = HalfPrecisionBackend::kCpuAmp;
  args.ddp_backend = DdpBackend::kNccl;
  ASSERT_NO_THROW(args.validate());
  const json written = to_json(args);
  EXPECT_EQ(written.at("eval_strategy"), "epoch");
  EXPECT_EQ(written.at("logging_strategy"), "no");
  EXPECT_EQ(written.at("save_strategy"), "best");
  EXPECT_EQ(written.at("optim"), "adamw_hf");  // kept as given, not rewritten to adamw_torch
  EXPECT_EQ(written.at("lr_scheduler_type"), "cosine_with_restarts");
  EXPECT_EQ(written.at("log_level"), "debug");
  EXPECT_EQ(written.at("log_level_replica"), "critical");
  EXPECT_EQ(written.at("train_sampling_strategy"), "sequential");
  EXPECT_EQ(written.at("half_precision_backend"), "cpu_amp");
  EXPECT_EQ(written.at("ddp_backend"), "nccl");

  // ... and the file reads back to the same values.
  const TrainingArguments loaded = parse_ok({write_file("choices.json", written.dump())});
  EXPECT_EQ(loaded.save_strategy, SaveStrategy::kBest);
  EXPECT_EQ(loaded.optim, OptimizerName::kAdamWHf);
  EXPECT_EQ(loaded.ddp_backend, DdpBackend::kNccl);
  EXPECT_EQ(to_json(loaded), written) << json::diff(written, to_json(loaded)).dump(2);

  // Every scheduler, one at a time, through the command line and to_json.
  // The min-lr cosines and warmup_stable_decay cannot run without their arguments (as in
  // transformers).
  for (const std::string& name : choice_names<SchedulerType>()) {
    std::vector<std::string> argv = {"--lr_scheduler_type", name};
    if (name.find("min_lr") != std::string::npos)
      argv.insert(argv.end(), {"--lr_scheduler_kwargs", R"({"min_lr_rate": 0.1})"});
    if (name == "warmup_stable_decay")
      argv.insert(argv.end(), {"--lr_scheduler_kwargs", R"({"num_decay_steps": 2})"});
    const TrainingArguments a = parse_ok(argv);
    EXPECT_EQ(to_string(a.lr_scheduler_type), name);
    EXPECT_EQ(to_json(a).at("lr_scheduler_type"), name);
  }
  EXPECT_FALSE(parse_ok({"--ddp_backend", "gloo", "--ddp_backend", "None"}).ddp_backend);
}

// ---- parser: which error wins ------------------------------------------------------------------

TEST(Choices, ParserJudgesOnlyTheLastValueOfAFlag) {
  // A config file's value overridden on the command line is not an error, whatever it was.
  const std::string path = write_file(
      "overridden.json", R"({"optim": "adafactor", "eval_strategy": "sometimes", "seed": 3})");
  const TrainingArguments a = parse_ok({path, "--optim", "sgd", "--eval_strategy", "epoch"});
  EXPECT_EQ(a.optim, OptimizerName::kSgd);
  EXPECT_EQ(a.eval_strategy, IntervalStrategy::kEpoch);
  EXPECT_EQ(a.seed, 3);
  EXPECT_EQ(parse_ok({"--optim", "adam", "--optim", "sgd"}).optim, OptimizerName::kSgd);
  // Not overridden, the same values are refused with the command line's messages.
  EXPECT_EQ(parse_error({path, "--optim", "sgd"}),
            "--eval_strategy must be one of no, steps, epoch (got 'sometimes')");
  EXPECT_EQ(parse_error({path, "--eval_strategy", "no"}, /*not_supported=*/true)
                .rfind("not supported yet: --optim adafactor", 0),
            0u);
  // A JSON value of the wrong type names the file and key, as for every flag.
  const std::string number = write_file("number.json", R"({"optim": 3})");
  EXPECT_EQ(parse_error({number}),
            "config file '" + number + "', key \"optim\": expected a string, got 3 (number)");
}

TEST(Choices, TyposComeFirstAndUnbuiltValuesLast) {
  // As when validate() judged the names: a typo before any range check ...
  EXPECT_EQ(parse_error({"--learning_rate", "-1", "--optim", "adam"}),
            "--optim must be one of adamw_torch_fused, adamw_torch, adamw_hf, sgd (got 'adam')");
  // ... and a value not supported yet after them, so a bad value gets its own message.
  EXPECT_EQ(parse_error({"--optim", "adafactor", "--learning_rate", "-1"}),
            "--learning_rate must be >= 0 (got -1.0)");
  EXPECT_EQ(parse_error({"--ddp_backend", "mpi", "--fp16", "--bf16"}),
            "--fp16 and --bf16 cannot both be set; choose one mixed precision");
  EXPECT_NE(parse_error({"--ddp_backend", "mpi"}, /*not_supported=*/true)
                .find("not supported yet: --ddp_backend mpi"),
            std::string::npos);
}

}  // namespace training_args_choices_test
}  // namespace ctrainer
