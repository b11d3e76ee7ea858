// ArgumentParser: command-line forms, JSON config files, the to_json round trip, application
// flags and --help. (Validation: training_args_validation_test.cpp; the enums of closed sets:
// training_args_choices_test.cpp.)
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/training_args.h>

#include "support/parse_args.h"

namespace ctrainer {
namespace training_args_parsing_test {

using nlohmann::json;
using testing::joined;
using testing::parse_error;
using testing::parse_ok;
using testing::run_parse;
using testing::write_file;

// ---- command-line forms ------------------------------------------------------------------------

TEST(ArgumentParserTest, FlagSpaceValueAndFlagEqualsValue) {
  const TrainingArguments a = parse_ok({"--learning_rate", "3e-5", "--seed=7", "--output_dir",
                                        "out/dir", "--num_train_epochs=2.5", "--optim", "sgd",
                                        "--max_steps", "-1", "--warmup_steps=+10"});
  EXPECT_DOUBLE_EQ(a.learning_rate, 3e-5);
  EXPECT_EQ(a.seed, 7);
  EXPECT_EQ(a.output_dir, "out/dir");
  EXPECT_DOUBLE_EQ(a.num_train_epochs, 2.5);
  EXPECT_EQ(a.optim, OptimizerName::kSgd);
  EXPECT_EQ(a.max_steps, -1);
  EXPECT_EQ(a.warmup_steps, 10);
}

TEST(ArgumentParserTest, BareBoolAndBoolLiterals) {
  EXPECT_TRUE(parse_ok({"--do_train"}).do_train);
  EXPECT_TRUE(parse_ok({"--do_train", "--do_predict"}).do_predict);
  EXPECT_TRUE(parse_ok({"--do_train", "true"}).do_train);
  EXPECT_TRUE(parse_ok({"--do_train", "True"}).do_train);
  EXPECT_TRUE(parse_ok({"--do_train", "yes"}).do_train);
  EXPECT_TRUE(parse_ok({"--do_train", "1"}).do_train);
  EXPECT_TRUE(parse_ok({"--do_train=T"}).do_train);
  EXPECT_FALSE(parse_ok({"--do_train", "false"}).do_train);
  EXPECT_FALSE(parse_ok({"--do_train", "False"}).do_train);
  EXPECT_FALSE(parse_ok({"--do_train", "no"}).do_train);
  EXPECT_FALSE(parse_ok({"--do_train", "0"}).do_train);
  EXPECT_FALSE(parse_ok({"--do_train=false"}).do_train);
  // A bool literal after a bare flag is its value, not a positional argument.
  const TrainingArguments a = parse_ok({"--fp16", "false", "--seed", "3"});
  EXPECT_FALSE(a.fp16);
  EXPECT_EQ(a.seed, 3);
  EXPECT_NE(parse_error({"--do_train=maybe"}).find("--do_train: expected a boolean"),
            std::string::npos);
}

TEST(ArgumentParserTest, NoComplementOfBoolsThatDefaultToTrue) {
  EXPECT_FALSE(parse_ok({"--no_dataloader_pin_memory"}).dataloader_pin_memory);
  EXPECT_FALSE(parse_ok({"--no-log-on-each-node"}).log_on_each_node);
  EXPECT_NE(parse_error({"--no_do_train"}).find("unknown flag --no_do_train"), std::string::npos);
}

TEST(ArgumentParserTest, RunReportingErrorsMapsExceptionsToExitCodes) {
  EXPECT_EQ(run_reporting_errors([] { return 0; }), 0);
  EXPECT_EQ(run_reporting_errors([] { return 5; }), 5);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_reporting_errors([]() -> int { throw ArgumentError("--x is bad"); }), 2);
  EXPECT_EQ(run_reporting_errors([]() -> int { throw std::runtime_error("disk full"); }), 1);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "error: --x is bad\nerror: disk full\n");
}

TEST(ArgumentParserTest, Aliases) {
  const TrainingArguments a = parse_ok({"--evaluation_strategy", "epoch", "--no_cuda"});
  EXPECT_EQ(a.eval_strategy, IntervalStrategy::kEpoch);
  EXPECT_TRUE(a.do_eval);  // as transformers: an eval strategy implies do_eval
  EXPECT_EQ(a.use_cpu, true);
  EXPECT_FALSE(a.dataloader_pin_memory);  // pinned memory needs an accelerator
  EXPECT_EQ(parse_ok({"--local-rank=-1"}).local_rank, -1);
  EXPECT_EQ(parse_ok({"--per-device-train-batch-size", "4"}).per_device_train_batch_size, 4);
  EXPECT_EQ(parse_ok({"--local-rank", "1"}).local_rank, 1);  // torch.distributed.launch's spelling
}

TEST(ArgumentParserTest, ListFlagsTakeOneOrMoreValues) {
  const TrainingArguments a =
      parse_ok({"--label_names", "start", "end", "--seed", "3", "--report_to", "none"});
  EXPECT_EQ(a.label_names, (std::vector<std::string>{"start", "end"}));
  EXPECT_EQ(a.label_keys(), (std::vector<std::string>{"start", "end"}));
  EXPECT_EQ(a.seed, 3);
  EXPECT_EQ(a.report_to, std::vector<std::string>{"none"});
  EXPECT_EQ(parse_ok({"--report_to", "all"}).report_to, std::vector<std::string>{"all"});
  EXPECT_FALSE(parse_ok({"--label_names", "x", "--label_names", "None"}).label_names);
  EXPECT_NE(parse_error({"--report_to"}).find("report_to"), std::string::npos);
}

TEST(ArgumentParserTest, NoneResetsOptionals) {
  const TrainingArguments a = parse_ok({"--data_seed", "5", "--data_seed", "None",
                                        "--save_total_limit", "2", "--save_total_limit", "none"});
  EXPECT_FALSE(a.data_seed.has_value());
  EXPECT_FALSE(a.save_total_limit.has_value());
  EXPECT_EQ(parse_ok({"--greater_is_better", "None"}).greater_is_better, std::nullopt);
  EXPECT_EQ(parse_ok({"--greater_is_better", "false"}).greater_is_better, false);
  EXPECT_EQ(parse_ok({"--data_seed", "5"}).sampler_seed(), 5);
}

TEST(ArgumentParserTest, LastOccurrenceWins) {
  EXPECT_EQ(parse_ok({"--seed", "1", "--seed", "2"}).seed, 2);
  EXPECT_FALSE(parse_ok({"--do_train", "--do_train", "false"}).do_train);
}

TEST(ArgumentParserTest, UnknownFlagSuggestsTheClosestName) {
  EXPECT_EQ(parse_error({"--learning_rat", "1"}),
            "unknown flag --learning_rat; did you mean --learning_rate?");
  EXPECT_EQ(parse_error({"--evaluation-strategy2", "no"}),
            "unknown flag --evaluation_strategy2; did you mean --evaluation_strategy?");
  // No prefix guessing: an abbreviation is refused, with the full name as a hint.
  EXPECT_EQ(parse_error({"--gradient_accum", "2"}),
            "unknown flag --gradient_accum; did you mean --gradient_accumulation_steps?");
  const std::string far = parse_error({"--xyzzy"});
  EXPECT_EQ(far.rfind("unknown flag --xyzzy", 0), 0u) << far;
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
  EXPECT_NE(parse_error({"-x"}).find("unknown flag -x"), std::string::npos);
}

TEST(ArgumentParserTest, StrayPositionalIsAnError) {
  EXPECT_NE(parse_error({"--seed", "1", "2"}).find("unexpected argument '2'"), std::string::npos);
  EXPECT_NE(parse_error({"train.txt"}).find("unexpected argument 'train.txt'"), std::string::npos);
}

TEST(ArgumentParserTest, ABooleanFlagFollowedByAWordIsAMisspeltValue) {
  // HfArgumentParser: "Truthy value expected"; before, the word was a stray positional.
  EXPECT_EQ(parse_error({"--greater_is_better", "maybe"}),
            "--greater_is_better takes true or false (also yes/no, 1/0), or nothing for true; "
            "got 'maybe'");
  EXPECT_TRUE(parse_ok({"--do_train", "--seed", "3"}).do_train);  // the next flag
  EXPECT_FALSE(parse_ok({"--do_train", "n"}).do_train);           // string_to_bool's words
  // The config file may follow a boolean flag.
  const std::string path = write_file("after_bool.json", R"({"seed": 12})");
  const TrainingArguments a = parse_ok({"--do_train", path});
  EXPECT_TRUE(a.do_train);
  EXPECT_EQ(a.seed, 12);
}

TEST(ArgumentParserTest, ALoggingDirThatIsAFileIsRefusedForTensorBoard) {
  const std::string file = write_file("logging_dir_file.txt", "notes");
  EXPECT_EQ(parse_error({"--report_to", "tensorboard", "--logging_dir", file}),
            "--logging_dir " + file +
                " is a file; --report_to tensorboard writes its event files into a folder: give a "
                "folder (created if missing)");
  EXPECT_EQ(parse_ok({"--report_to", "none", "--logging_dir", file}).logging_dir, file);
}

// Found by fuzz/command_line_fuzzer.cpp: a value that is not UTF-8 parsed, then made writing
// training_args.json throw nlohmann's type_error in the middle of a run.
TEST(ArgumentParserTest, AValueThatIsNotUtf8IsRefusedNamingItsFlag) {
  EXPECT_EQ(parse_error({"--seed", "1", "--label_names", "labels", "extr\x9f\xf2ry"}),
            "argument 5 (after --label_names) is not valid UTF-8 (byte 4): flags and their values "
            "must be UTF-8 text, as training_args.json is JSON");
  EXPECT_NE(parse_error({"--output_dir", "out\xff"}).find("argument 2 (after --output_dir)"),
            std::string::npos);
  EXPECT_EQ(parse_ok({"--run_name", "caf\xc3\xa9"}).run_name, "caf\xc3\xa9");  // UTF-8 is fine
}

TEST(ArgumentParserTest, MissingValueIsAnError) {
  EXPECT_NE(parse_error({"--seed"}).find("seed"), std::string::npos);
  EXPECT_NE(parse_error({"--seed", "--do_train"}).find("seed"), std::string::npos);
}

// ---- JSON config files -------------------------------------------------------------------------

TEST(ArgumentParserTest, JsonConfigWithCommandLineOverride) {
  const std::string path = write_file("override.json", R"({
    "learning_rate": 1e-4, "seed": 3, "evaluation_strategy": "epoch", "report_to": "none",
    "label_names": ["y"], "data_seed": null, "num_train_epochs": 2, "max_steps": 10.0,
    "do_train": true})");
  for (const auto& tokens : std::vector<std::vector<std::string>>{
           {"--config", path, "--seed", "9"}, {"--seed", "9", "--config", path}}) {
    const TrainingArguments a = parse_ok(tokens);
    EXPECT_DOUBLE_EQ(a.learning_rate, 1e-4) << joined(tokens);
    EXPECT_EQ(a.seed, 9) << joined(tokens);  // the command line wins whatever the order
    EXPECT_EQ(a.eval_strategy, IntervalStrategy::kEpoch);
    EXPECT_TRUE(a.do_eval);
    EXPECT_TRUE(a.do_train);
    EXPECT_EQ(a.report_to, std::vector<std::string>{"none"});
    EXPECT_EQ(a.label_names, std::vector<std::string>{"y"});
    EXPECT_DOUBLE_EQ(a.num_train_epochs, 2.0);
    EXPECT_EQ(a.max_steps, 10);
  }
  EXPECT_EQ(parse_ok({"--config=" + path}).seed, 3);
}

TEST(ArgumentParserTest, ADictFieldIsJsonTextOnTheCommandLineAndAnObjectInAConfig) {
  const TrainingArguments a =
      parse_ok({"--lr_scheduler_type", "cosine", "--lr_scheduler_kwargs", R"({"num_cycles": 2})"});
  ASSERT_TRUE(a.lr_scheduler_kwargs);
  EXPECT_EQ(json::parse(a.lr_scheduler_kwargs->text), json({{"num_cycles", 2}}));
  EXPECT_EQ(to_json(a)["lr_scheduler_kwargs"], json({{"num_cycles", 2}}));  // an object, as HF
  EXPECT_EQ(to_json(parse_ok({}))["lr_scheduler_kwargs"], nullptr);         // HF's default None
  const std::string path = write_file("kwargs.json", R"({"lr_scheduler_type": "cosine",
    "lr_scheduler_kwargs": {"num_cycles": 0.25}})");
  EXPECT_EQ(json::parse(parse_ok({"--config", path}).lr_scheduler_kwargs->text),
            json({{"num_cycles", 0.25}}));
  // HF also reads the object's text from a config's string.
  const std::string text = write_file("kwargs_text.json", R"({"lr_scheduler_type": "cosine",
    "lr_scheduler_kwargs": "{\"num_cycles\": 3}"})");
  EXPECT_EQ(json::parse(parse_ok({"--config", text}).lr_scheduler_kwargs->text),
            json({{"num_cycles", 3}}));
  EXPECT_NE(parse_error({"--lr_scheduler_kwargs", "num_cycles=2"}).find("expected a JSON object"),
            std::string::npos);
  EXPECT_NE(parse_error({"--lr_scheduler_kwargs", "[1, 2]"}).find("a JSON object"),
            std::string::npos);
  // The parser reports a number too large for a double as out_of_range, not parse_error.
  EXPECT_NE(parse_error({"--lr_scheduler_kwargs", R"({"num_cycles": 1e400})"})
                .find("expected a JSON object"),
            std::string::npos);
}

TEST(ArgumentParserTest, SinglePositionalJsonIsTheConfig) {
  const std::string path = write_file("positional.json", R"({"seed": 11, "do_train": true})");
  EXPECT_EQ(parse_ok({path}).seed, 11);
  const TrainingArguments a = parse_ok({path, "--learning_rate", "0.5"});
  EXPECT_EQ(a.seed, 11);
  EXPECT_DOUBLE_EQ(a.learning_rate, 0.5);
  // A bare bool does not swallow the positional file.
  const TrainingArguments b = parse_ok({"--do_predict", path});
  EXPECT_TRUE(b.do_predict);
  EXPECT_EQ(b.seed, 11);
  EXPECT_NE(parse_error({path, path}).find("unexpected argument"), std::string::npos);
}

TEST(ArgumentParserTest, JsonErrorsNameTheFileAndKey) {
  const std::string unknown = write_file("unknown.json", R"({"lerning_rate": 0.1})");
  EXPECT_EQ(parse_error({"--config", unknown}),
            "config file '" + unknown +
                "': unknown key \"lerning_rate\"; did you mean \"learning_rate\"?");

  const std::string wrong_type = write_file("wrong_type.json", R"({"seed": "abc"})");
  EXPECT_EQ(
      parse_error({"--config", wrong_type}),
      "config file '" + wrong_type + "', key \"seed\": expected an integer, got \"abc\" (string)");

  const std::string fraction = write_file("fraction.json", R"({"seed": 1.5})");
  EXPECT_NE(parse_error({fraction}).find("key \"seed\": expected an integer"), std::string::npos);

  const std::string bool_type = write_file("bool_type.json", R"({"fp16": "yes"})");
  EXPECT_NE(parse_error({bool_type}).find("key \"fp16\": expected a boolean"), std::string::npos);

  const std::string null_required = write_file("null.json", R"({"learning_rate": null})");
  EXPECT_NE(parse_error({null_required}).find("key \"learning_rate\": expected a number"),
            std::string::npos);

  const std::string list_type = write_file("list.json", R"({"label_names": [1, 2]})");
  EXPECT_NE(parse_error({list_type}).find("key \"label_names\": expected a list of strings"),
            std::string::npos);

  const std::string invalid = write_file("invalid.json", R"({"seed": 1,})");
  EXPECT_NE(
      parse_error({"--config", invalid}).find("config file '" + invalid + "' is not valid JSON"),
      std::string::npos);

  const std::string array = write_file("array.json", "[1, 2]");
  EXPECT_NE(parse_error({array}).find("must hold a JSON object"), std::string::npos);

  const std::string both =
      write_file("both.json", R"({"eval_strategy": "no", "evaluation_strategy": "no"})");
  EXPECT_NE(parse_error({both}).find("both set eval_strategy"), std::string::npos);

  const std::string missing = ::testing::TempDir() + "ctrainer_does_not_exist.json";
  EXPECT_EQ(parse_error({"--config", missing}),
            "cannot read config file '" + missing + "': no such file");
}

TEST(ArgumentParserTest, ValidationErrorsFromJsonNameTheFlag) {
  const std::string path = write_file("bad_value.json", R"({"warmup_ratio": 1.5})");
  EXPECT_EQ(parse_error({path}), "--warmup_ratio must be in [0, 1] (got 1.5)");
}

// ---- to_json round trip ------------------------------------------------------------------------

TEST(ArgumentParserTest, ToJsonRoundTripsThroughAConfigFile) {
  // clang-format off
  const TrainingArguments original = parse_ok(
      {"--output_dir", "out", "--learning_rate", "3e-5", "--seed", "7", "--eval_strategy",
       "steps", "--eval_steps", "0.25", "--logging_steps", "20", "--label_names", "a", "b",
       "--data_seed", "11", "--metric_for_best_model", "accuracy", "--greater_is_better", "false",
       "--ddp_backend", "gloo", "--ddp_bucket_cap_mb", "25", "--save_total_limit", "3",
       "--max_steps", "100", "--warmup_ratio", "0.1", "--use_cpu", "--report_to", "all",
       "--run_name", "r1", "--ddp_find_unused_parameters", "true", "--eval_accumulation_steps",
       "4", "--weight_decay", "0.01", "--adam_beta2", "0.98", "--optim", "sgd",
       "--lr_scheduler_type", "cosine", "--log_level", "info", "--num_train_epochs", "1.5",
       "--label_smoothing_factor", "0.1", "--do_train", "--overwrite_output_dir",
       "--logging_first_step", "--save_only_model", "--disable_tqdm", "--dataloader_drop_last",
       "--ignore_data_skip", "--full_determinism", "--per_device_train_batch_size", "16",
       "--gradient_accumulation_steps", "2", "--ddp_timeout", "60", "--adam_epsilon", "1e-6"});
  // clang-format on
  const json written = to_json(original);
  EXPECT_TRUE(written.at("resume_from_checkpoint").is_null());
  EXPECT_EQ(written.at("eval_strategy"), "steps");
  EXPECT_FALSE(written.contains("evaluation_strategy"));  // HF names only, never aliases
  const std::string path = write_file("training_args.json", written.dump(2));

  const TrainingArguments loaded = parse_ok({"--config", path});
  EXPECT_EQ(to_json(loaded), written) << json::diff(written, to_json(loaded)).dump(2);
  EXPECT_DOUBLE_EQ(loaded.learning_rate, 3e-5);
  EXPECT_EQ(loaded.label_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(loaded.eval_steps, 0.25);
  EXPECT_EQ(loaded.greater_is_better, false);
  EXPECT_EQ(loaded.ddp_bucket_cap_mb, 25);
  EXPECT_FALSE(loaded.resume_from_checkpoint.has_value());

  // The defaults round-trip too, through the positional form.
  const json defaults = to_json(parse_ok({}));
  const std::string default_path = write_file("defaults.json", defaults.dump());
  EXPECT_EQ(to_json(parse_ok({default_path})), defaults);
}

// ---- application options -----------------------------------------------------------------------

struct AppFlags {
  int64_t num_examples = 100;
  double noise = 0.5;
  std::string dataset = "toy";
  bool shuffle = true;
  std::vector<std::string> columns = {"x"};
};

void add_app_flags(ArgumentParser& parser, AppFlags& flags) {
  parser.add_option("num_examples", &flags.num_examples, "Number of synthetic examples.");
  parser.add_option("noise", &flags.noise, "Noise level of the labels.");
  parser.add_option("dataset", &flags.dataset, "Dataset name.");
  parser.add_option("shuffle", &flags.shuffle, "Shuffle the examples.");
  parser.add_option("columns", &flags.columns, "Input columns.");
}

TEST(ArgumentParserTest, ApplicationOptionsFromCommandLineAndJson) {
  {
    ArgumentParser parser("app");
    AppFlags flags;
    add_app_flags(parser, flags);
    TrainingArguments args;
    ASSERT_TRUE(run_parse(parser,
                          {"--num_examples", "64", "--noise=0.25", "--dataset", "moons",
                           "--no_shuffle", "--columns", "a", "b", "--seed", "3"},
                          args));
    EXPECT_EQ(flags.num_examples, 64);
    EXPECT_DOUBLE_EQ(flags.noise, 0.25);
    EXPECT_EQ(flags.dataset, "moons");
    EXPECT_FALSE(flags.shuffle);
    EXPECT_EQ(flags.columns, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(args.seed, 3);
  }
  {
    ArgumentParser parser("app");
    AppFlags flags;
    add_app_flags(parser, flags);
    const std::string path =
        write_file("app.json", R"({"num_examples": 8, "shuffle": false, "learning_rate": 0.1})");
    TrainingArguments args;
    ASSERT_TRUE(run_parse(parser, {path, "--num_examples", "9", "--shuffle"}, args));
    EXPECT_EQ(flags.num_examples, 9);
    EXPECT_TRUE(flags.shuffle);
    EXPECT_DOUBLE_EQ(args.learning_rate, 0.1);
  }
  {
    ArgumentParser parser("app");
    AppFlags flags;
    add_app_flags(parser, flags);
    TrainingArguments args;
    EXPECT_THROW(
        {
          try {
            run_parse(parser, {"--num_examples", "many"}, args);
          } catch (const ArgumentError& e) {
            EXPECT_STREQ(e.what(), "--num_examples: expected an integer, got 'many'");
            throw;
          }
        },
        ArgumentError);
    EXPECT_THROW(
        {
          try {
            run_parse(parser, {"--num_example", "3"}, args);
          } catch (const ArgumentError& e) {
            EXPECT_STREQ(e.what(), "unknown flag --num_example; did you mean --num_examples?");
            throw;
          }
        },
        ArgumentError);
  }
}

TEST(ArgumentParserTest, ApplicationOptionNamesMustBeNewAndValid) {
  ArgumentParser parser("app");
  int64_t value = 0;
  EXPECT_THROW(parser.add_option("seed", &value, "clash"), std::invalid_argument);
  EXPECT_THROW(parser.add_option("evaluation_strategy", &value, "alias clash"),
               std::invalid_argument);
  EXPECT_THROW(parser.add_option("config", &value, "reserved"), std::invalid_argument);
  EXPECT_THROW(parser.add_option("Bad-Name", &value, "invalid"), std::invalid_argument);
  parser.add_option("steps_per_print", &value, "ok");
  EXPECT_THROW(parser.add_option("steps_per_print", &value, "twice"), std::invalid_argument);
}

TEST(ArgumentParserTest, FailedParseLeavesArgumentsUnchanged) {
  ArgumentParser parser("test");
  TrainingArguments args;
  args.seed = 123;
  EXPECT_THROW(run_parse(parser, {"--seed", "1", "--warmup_ratio", "2"}, args), ArgumentError);
  EXPECT_EQ(args.seed, 123);
  EXPECT_FALSE(args.run_name.has_value());
}

// ---- --help ------------------------------------------------------------------------------------

TEST(ArgumentParserTest, HelpListsEveryFlagWithDefaultAndHelp) {
  ArgumentParser parser("Trains a toy model.");
  AppFlags flags;
  add_app_flags(parser, flags);
  const std::string help = parser.help();
  const json fields = to_json(TrainingArguments{});
  for (const auto& [name, value] : fields.items()) {
    EXPECT_NE(help.find("  --" + name + " "), std::string::npos) << name;
  }
  EXPECT_EQ(help.rfind("Trains a toy model.", 0), 0u);
  EXPECT_NE(help.find("--learning_rate FLOAT  (default: 5e-05)"), std::string::npos);
  EXPECT_NE(help.find("--eval_strategy {no,steps,epoch}  (default: no)"), std::string::npos);
  // Help paragraphs are wrapped: compare them with whitespace runs collapsed.
  std::string flat;
  for (const char c : help) {
    const bool space = c == ' ' || c == '\n';
    if (!space || (!flat.empty() && flat.back() != ' ')) flat += space ? ' ' : c;
  }
  EXPECT_NE(flat.find("Alias: --evaluation_strategy."), std::string::npos);
  EXPECT_NE(flat.find("Alias: --no_cuda."), std::string::npos);
  EXPECT_NE(flat.find("Disable with --no_dataloader_pin_memory."), std::string::npos);
  EXPECT_NE(flat.find("--lr_scheduler_type CHOICE (default: linear) Learning-rate schedule. "
                      "Choices: linear, cosine, cosine_with_restarts, polynomial, constant, "
                      "constant_with_warmup, inverse_sqrt, cosine_with_min_lr, "
                      "cosine_warmup_with_min_lr, warmup_stable_decay."),
            std::string::npos);
  EXPECT_NE(help.find("--report_to STR [STR ...]  (default: none)"), std::string::npos);
  EXPECT_NE(help.find("--run_name STR  (default: None)"), std::string::npos);
  EXPECT_NE(help.find("--config FILE.json"), std::string::npos);
  // Application flags come after the TrainingArguments flags, with their defaults.
  const size_t app = help.find("\napplication:\n");
  ASSERT_NE(app, std::string::npos);
  EXPECT_GT(app, help.find("--deepspeed"));
  EXPECT_NE(help.find("--num_examples INT  (default: 100)", app), std::string::npos);
  EXPECT_NE(help.find("--noise FLOAT  (default: 0.5)", app), std::string::npos);
  EXPECT_NE(help.find("--dataset STR  (default: toy)", app), std::string::npos);
  EXPECT_NE(help.find("--shuffle [BOOL]  (default: true)", app), std::string::npos);
  EXPECT_NE(help.find("Number of synthetic examples.", app), std::string::npos);
  for (const OptionSpec& spec : training_args_options()) {
    EXPECT_NE(flat.find(spec.help), std::string::npos) << spec.name;
  }
  for (size_t start = 0, end; start < help.size(); start = end + 1) {
    end = help.find('\n', start);
    if (end == std::string::npos) end = help.size();
    EXPECT_LE(end - start, 100u) << help.substr(start, end - start);
  }
}

TEST(ArgumentParserTest, HelpFlagPrintsHelpAndReturnsFalse) {
  for (const std::string flag : {"--help", "-h"}) {
    ArgumentParser parser("desc");
    TrainingArguments args;
    ::testing::internal::CaptureStdout();
    // --help wins over an unknown flag and leaves the arguments untouched.
    const bool parsed = run_parse(parser, {"--seed", "5", "--bogus", flag}, args);
    const std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_FALSE(parsed);
    EXPECT_EQ(out, parser.help());
    EXPECT_NE(out.find("usage: prog "), std::string::npos);
    EXPECT_EQ(args.seed, 42);
  }
}

TEST(ArgumentParserDeathTest, ParseArgsOrExit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto run = [](std::vector<std::string> tokens) {
    tokens.insert(tokens.begin(), "prog");
    std::vector<char*> argv;
    for (std::string& t : tokens) argv.push_back(t.data());
    ArgumentParser parser("desc");
    parse_args_or_exit(parser, static_cast<int>(argv.size()), argv.data());
    std::exit(7);  // reached only when parsing succeeded
  };
  EXPECT_EXIT(run({"--bogus"}), ::testing::ExitedWithCode(2), "error: unknown flag --bogus");
  EXPECT_EXIT(run({"--half_precision_backend", "apex"}), ::testing::ExitedWithCode(2),
              "error: not supported yet: --half_precision_backend apex");
  EXPECT_EXIT(run({"--help"}), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(run({"--seed", "3"}), ::testing::ExitedWithCode(7), "");
}

TEST(TrainingArgumentsParsing, IncludeNumInputTokensSeenTakesItsChoicesAndBooleans) {
  EXPECT_EQ(parse_ok({}).include_num_input_tokens_seen, InputTokensSeen::kNo);
  EXPECT_EQ(
      parse_ok({"--include_num_input_tokens_seen", "non_padding"}).include_num_input_tokens_seen,
      InputTokensSeen::kNonPadding);
  EXPECT_EQ(parse_ok({"--include_num_input_tokens_seen", "True"}).include_num_input_tokens_seen,
            InputTokensSeen::kAll);
  EXPECT_EQ(parse_ok({"--include_num_input_tokens_seen", "0"}).include_num_input_tokens_seen,
            InputTokensSeen::kNo);
  // In a JSON config, as transformers maps a bool: true -> "all"; written back by name.
  const TrainingArguments from_json =
      parse_ok({write_file("tokens.json", R"({"include_num_input_tokens_seen": true})")});
  EXPECT_EQ(from_json.include_num_input_tokens_seen, InputTokensSeen::kAll);
  EXPECT_EQ(to_json(from_json).at("include_num_input_tokens_seen"), "all");
  const std::string error = parse_error({"--include_num_input_tokens_seen", "some"});
  for (const char* part : {"--include_num_input_tokens_seen", "non_padding", "some"})
    EXPECT_NE(error.find(part), std::string::npos) << error;
}

TEST(TrainingArgumentsParsing, ActivationCheckpointingIsTheNameGradientCheckpointingTheAlias) {
  EXPECT_TRUE(parse_ok({"--activation_checkpointing"}).gradient_checkpointing);
  EXPECT_TRUE(parse_ok({"--gradient_checkpointing"}).gradient_checkpointing);
  // transformers 5: the new name wins over the alias, in either order.
  EXPECT_FALSE(parse_ok({"--activation_checkpointing", "false", "--gradient_checkpointing"})
                   .gradient_checkpointing);
  EXPECT_FALSE(parse_ok({"--gradient_checkpointing", "--activation_checkpointing", "false"})
                   .gradient_checkpointing);
  // training_args.json carries both names with the one value, as transformers writes them.
  const nlohmann::json written = to_json(parse_ok({"--gradient_checkpointing"}));
  EXPECT_EQ(written["activation_checkpointing"], true);
  EXPECT_EQ(written["gradient_checkpointing"], true);
}

TEST(TrainingArgumentsParsing, WarmupStepsBelowOneAreARatio) {
  EXPECT_DOUBLE_EQ(parse_ok({"--warmup_steps", "0.1"}).warmup_steps, 0.1);
  EXPECT_DOUBLE_EQ(parse_ok({"--warmup_steps", "3"}).warmup_steps, 3.0);
  EXPECT_NE(parse_error({"--warmup_steps", "2.5"}).find("whole number"), std::string::npos);
  EXPECT_NE(parse_error({"--warmup_steps", "-0.1"}).find("--warmup_steps"), std::string::npos);
}

}  // namespace training_args_parsing_test
}  // namespace ctrainer
