// TrainingArguments: Hugging Face's defaults, derived defaults and validate()'s checks, through
// the parser and on structs filled in code.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/training_args.h>

#include "support/parse_args.h"

namespace ctrainer {
namespace training_args_validation_test {

using nlohmann::json;
using testing::joined;
using testing::parse_error;
using testing::parse_ok;
using testing::run_parse;
using testing::write_file;

// ---- defaults ----------------------------------------------------------------------------------

TEST(TrainingArgumentsTest, DefaultsEqualHuggingFace) {
  // transformers.TrainingArguments defaults, plus ctrainer's save_on_signal.
  const json expected = {
      {"output_dir", "trainer_output"},
      {"overwrite_output_dir", false},
      {"do_train", false},
      {"do_eval", false},
      {"do_predict", false},
      {"run_name", nullptr},
      {"eval_strategy", "no"},
      {"eval_steps", nullptr},
      {"logging_strategy", "steps"},
      {"logging_steps", 500.0},
      {"logging_first_step", false},
      {"profile_steps", 0},  // ctrainer's own (--profile_steps)
      {"save_strategy", "steps"},
      {"save_steps", 500.0},
      {"save_total_limit", nullptr},
      {"save_only_model", false},
      {"per_device_train_batch_size", 8},
      {"per_device_eval_batch_size", 8},
      {"gradient_accumulation_steps", 1},
      {"eval_accumulation_steps", nullptr},
      {"learning_rate", 5e-5},
      {"weight_decay", 0.0},
      {"adam_beta1", 0.9},
      {"adam_beta2", 0.999},
      {"adam_epsilon", 1e-8},
      {"max_grad_norm", 1.0},
      {"optim", "adamw_torch_fused"},
      {"num_train_epochs", 3.0},
      {"max_steps", -1},
      {"lr_scheduler_type", "linear"},
      // HF's default is an empty dict: no schedule arguments, which we hold as unset.
      {"lr_scheduler_kwargs", nullptr},
      {"warmup_steps", 0},
      {"warmup_ratio", 0.0},
      {"seed", 42},
      {"data_seed", nullptr},
      {"full_determinism", false},
      {"log_level", "passive"},
      {"log_level_replica", "warning"},
      {"log_on_each_node", true},
      {"disable_tqdm", false},
      {"report_to", {"none"}},
      {"logging_dir", nullptr},
      {"dataloader_num_workers", 0},
      {"dataloader_drop_last", false},
      {"dataloader_pin_memory", true},
      {"dataloader_prefetch_factor", nullptr},
      {"label_names", nullptr},
      {"train_sampling_strategy", "random"},
      {"group_by_length", false},
      {"load_best_model_at_end", false},
      {"metric_for_best_model", nullptr},
      {"greater_is_better", nullptr},
      {"resume_from_checkpoint", nullptr},
      {"ignore_data_skip", false},
      {"save_on_signal", true},
      {"use_cpu", nullptr},
      {"fp16", false},
      {"bf16", false},
      {"half_precision_backend", "auto"},
      {"fp16_opt_level", "O1"},
      {"fp16_full_eval", false},
      {"bf16_full_eval", false},
      {"tf32", nullptr},
      {"label_smoothing_factor", 0.0},
      {"gradient_checkpointing", false},
      {"activation_checkpointing", false},
      {"neftune_noise_alpha", nullptr},
      {"local_rank", -1},
      {"ddp_backend", nullptr},
      {"ddp_timeout", 1800},
      {"average_tokens_across_devices", true},
      {"include_num_input_tokens_seen", "no"},
      {"ddp_find_unused_parameters", nullptr},
      {"ddp_bucket_cap_mb", nullptr},
      {"fsdp", ""},
      {"fsdp_config", nullptr},
      {"deepspeed", nullptr},
  };
  const json actual = to_json(TrainingArguments{});
  EXPECT_EQ(actual.size(), 77u);
  EXPECT_EQ(actual, expected) << json::diff(expected, actual).dump(2);
  EXPECT_EQ(training_args_options().size(), expected.size());
}

TEST(TrainingArgumentsTest, ParsingNothingGivesValidatedDefaults) {
  const TrainingArguments args = parse_ok({});
  EXPECT_EQ(args.run_name, "trainer_output");  // derived from output_dir
  EXPECT_FALSE(args.eval_steps.has_value());
  EXPECT_FALSE(args.do_eval);
  EXPECT_EQ(args.label_keys(), std::vector<std::string>{"labels"});
  EXPECT_EQ(args.sampler_seed(), 42);
}

TEST(TrainingArgumentsTest, ParseStartsFromTheCurrentValues) {
  ArgumentParser parser("test");
  TrainingArguments args;
  args.seed = 5;
  args.output_dir = "mine";
  ASSERT_TRUE(run_parse(parser, {"--learning_rate", "1e-3"}, args));
  EXPECT_EQ(args.seed, 5);
  EXPECT_EQ(args.output_dir, "mine");
  EXPECT_DOUBLE_EQ(args.learning_rate, 1e-3);
}

// ---- bad values --------------------------------------------------------------------------------

TEST(ArgumentParserTest, BadValuesNameTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--eval_strategy", "sometimes"}, "--eval_strategy must be one of no, steps, epoch"},
      {{"--logging_strategy", "always"}, "--logging_strategy must be one of no, steps, epoch"},
      {{"--save_strategy", "often"}, "--save_strategy must be one of no, steps, epoch, best"},
      {{"--lr_scheduler_type", "cosine_annealing"}, "--lr_scheduler_type must be one of linear"},
      {{"--optim", "adam"},
       "--optim must be one of adamw_torch_fused, adamw_torch, adamw_hf, sgd (got 'adam')"},
      {{"--log_level", "verbose"}, "--log_level must be one of passive"},
      {{"--log_level_replica", "loud"}, "--log_level_replica must be one of passive"},
      {{"--seed", "abc"}, "--seed: expected an integer, got 'abc'"},
      {{"--seed", "1.5"}, "--seed: expected an integer"},
      {{"--learning_rate", "fast"}, "--learning_rate: expected a number, got 'fast'"},
      {{"--learning_rate", "nan"}, "--learning_rate: expected a finite number"},
      {{"--learning_rate", "-1"}, "--learning_rate must be >= 0 (got -1.0)"},
      {{"--weight_decay", "-0.1"}, "--weight_decay must be >= 0"},
      {{"--adam_beta1", "1"}, "--adam_beta1 must be in [0, 1) (got 1.0)"},
      {{"--adam_beta2", "-0.5"}, "--adam_beta2 must be in [0, 1)"},
      {{"--adam_epsilon", "-1e-8"}, "--adam_epsilon must be >= 0"},
      {{"--max_grad_norm", "-1"}, "--max_grad_norm must be >= 0"},
      {{"--num_train_epochs", "-1"}, "--num_train_epochs must be >= 0"},
      {{"--max_steps", "0"}, "--max_steps must be -1 (train for num_train_epochs) or > 0"},
      {{"--max_steps", "-2"}, "--max_steps must be -1"},
      {{"--warmup_steps", "-5"}, "--warmup_steps must be >= 0 (got -5.0)"},
      {{"--warmup_ratio", "1.5"}, "--warmup_ratio must be in [0, 1] (got 1.5)"},
      {{"--per_device_train_batch_size", "-8"}, "--per_device_train_batch_size must be >= 1"},
      {{"--per_device_eval_batch_size", "0"}, "--per_device_eval_batch_size must be >= 1"},
      {{"--gradient_accumulation_steps", "0"}, "--gradient_accumulation_steps must be >= 1"},
      {{"--eval_accumulation_steps", "0"}, "--eval_accumulation_steps must be >= 1"},
      {{"--logging_steps", "0"}, "--logging_steps must be > 0 with --logging_strategy steps"},
      {{"--logging_steps", "2.5"}, "--logging_steps must be an integer when >= 1 (got 2.5)"},
      {{"--eval_strategy", "steps", "--eval_steps", "-3"},
       "--eval_steps must be > 0 with --eval_strategy steps"},
      {{"--eval_strategy", "steps", "--logging_strategy", "no", "--logging_steps", "0"},
       "--eval_strategy steps requires a positive --eval_steps"},
      {{"--save_strategy", "steps", "--save_steps", "1.5"},
       "--save_steps must be an integer when >= 1"},
      {{"--save_total_limit", "0"}, "--save_total_limit must be >= 1"},
      {{"--label_smoothing_factor", "1"}, "--label_smoothing_factor must be in [0, 1)"},
      {{"--dataloader_num_workers", "-1"}, "--dataloader_num_workers must be >= 0"},
      {{"--dataloader_num_workers", "2", "--dataloader_prefetch_factor", "0"},
       "--dataloader_prefetch_factor must be >= 1"},
      {{"--dataloader_prefetch_factor", "4"},
       "--dataloader_prefetch_factor only applies when batches are built by workers"},
      {{"--local_rank", "-2"}, "--local_rank must be >= -1"},
      {{"--ddp_timeout", "0"}, "--ddp_timeout must be >= 1"},
      {{"--ddp_bucket_cap_mb", "0"}, "--ddp_bucket_cap_mb must be >= 1"},
      {{"--ddp_backend", "ucc"},
       "--ddp_backend must be one of gloo, nccl, mpi, xccl, hccl, cncl, mccl (got 'ucc')"},
      {{"--report_to", "foo"}, "--report_to: unknown integration 'foo'"},
      {{"--report_to", "none", "wandb"}, "--report_to none cannot be combined"},
      {{"--fsdp", "full_shard bogus"}, "--fsdp: unknown option 'bogus'"},
      {{"--train_sampling_strategy", "shuffled"},
       "--train_sampling_strategy must be one of random, sequential, group_by_length (got "
       "'shuffled')"},
      {{"--output_dir="}, "--output_dir must not be empty"},
      // A bad value gets its own message even when the feature is refused as not supported yet.
      {{"--fp16", "--learning_rate", "-1"}, "--learning_rate must be >= 0"},
  };
  for (const auto& [tokens, expected] : cases) {
    const std::string message = parse_error(tokens);
    EXPECT_EQ(message.rfind(expected, 0), 0u)
        << joined(tokens) << "\n  expected prefix: " << expected << "\n  got: " << message;
  }
}

TEST(ArgumentParserTest, Contradictions) {
  EXPECT_EQ(parse_error({"--fp16", "--bf16"}),
            "--fp16 and --bf16 cannot both be set; choose one mixed precision");
  EXPECT_NE(parse_error({"--load_best_model_at_end", "--eval_strategy", "epoch"})
                .find("--load_best_model_at_end requires --save_strategy to match "
                      "--eval_strategy (got eval_strategy epoch, save_strategy steps)"),
            std::string::npos);
  EXPECT_NE(parse_error({"--load_best_model_at_end", "--eval_strategy", "steps", "--eval_steps",
                         "100", "--save_strategy", "steps", "--save_steps", "150"})
                .find("--save_steps (150.0) to be a round multiple of --eval_steps (100.0)"),
            std::string::npos);
  EXPECT_NE(parse_error({"--load_best_model_at_end", "--eval_strategy", "steps", "--eval_steps",
                         "0.1", "--save_strategy", "steps", "--save_steps", "500"})
                .find("mixing a ratio and a number of steps"),
            std::string::npos);
  EXPECT_NE(parse_error({"--load_best_model_at_end", "--eval_strategy", "steps", "--eval_steps",
                         "0.2", "--save_strategy", "steps", "--save_steps", "0.5"})
                .find("--save_steps (0.5) to be a multiple of --eval_steps (0.2)"),
            std::string::npos);
  // Compatible strategies and steps pass the rule.
  EXPECT_NO_THROW(parse_ok({"--load_best_model_at_end", "--eval_strategy", "steps", "--eval_steps",
                            "0.1", "--save_strategy", "steps", "--save_steps", "0.5"}));
  EXPECT_NO_THROW(parse_ok({"--load_best_model_at_end", "--eval_strategy", "steps", "--eval_steps",
                            "100", "--save_strategy", "steps", "--save_steps", "300"}));
  EXPECT_EQ(parse_error({"--group_by_length", "--train_sampling_strategy", "sequential"}),
            "--group_by_length contradicts --train_sampling_strategy sequential; give only one "
            "of them");
  // save_strategy best needs a metric to compare checkpoints by.
  EXPECT_NE(parse_error({"--save_strategy", "best"})
                .find("--save_strategy best needs --metric_for_best_model"),
            std::string::npos);
  EXPECT_NO_THROW(parse_ok({"--save_strategy", "best", "--metric_for_best_model", "accuracy"}));
}

TEST(TrainingArgumentsTest, ValidateChecksStructsFilledInCode) {
  TrainingArguments args;
  args.per_device_train_batch_size = 0;
  EXPECT_THROW(args.validate(), ArgumentError);
  args = TrainingArguments{};
  args.warmup_ratio = -0.1;
  EXPECT_THROW(args.validate(), ArgumentError);
  args = TrainingArguments{};
  // A typo never reaches the struct (the parse function is case-sensitive, as HF); an integer
  // cast to the enum is refused by validate().
  EXPECT_THROW(parse_choice<SchedulerType>("Linear", "lr_scheduler_type"), ArgumentError);
  args.lr_scheduler_type = static_cast<SchedulerType>(42);
  EXPECT_THROW(args.validate(), ArgumentError);
  args = TrainingArguments{};
  EXPECT_NO_THROW(args.validate());
  EXPECT_NO_THROW(args.validate());  // idempotent
}

TEST(ArgumentParserTest, NotSupportedYetNamesTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--half_precision_backend", "apex"}, "not supported yet: --half_precision_backend apex"},
      {{"--optim", "adafactor"},
       "not supported yet: --optim adafactor "
       "(available: adamw_torch_fused, adamw_torch, adamw_hf, sgd)"},
      {{"--optim", "adamw_torch_xla"}, "not supported yet: --optim adamw_torch_xla"},
      {{"--lr_scheduler_type", "reduce_lr_on_plateau"},
       "not supported yet: --lr_scheduler_type reduce_lr_on_plateau"},
      {{"--log_level", "detail"}, "not supported yet: --log_level detail"},
      {{"--ddp_backend", "mpi"}, "not supported yet: --ddp_backend mpi"},
      {{"--ddp_backend", "xccl"}, "not supported yet: --ddp_backend xccl (use gloo or nccl)"},
      {{"--ddp_backend", "hccl"}, "not supported yet: --ddp_backend hccl"},
      {{"--report_to", "kubeflow"}, "not supported yet: --report_to kubeflow"},
      {{"--lr_scheduler_type", "greedy"}, "not supported yet: --lr_scheduler_type greedy"},
      {{"--report_to", "wandb"},
       "not supported yet: --report_to wandb (ctrainer reports to mlflow, tensorboard; use those "
       "or none)"},
      {{"--report_to", "tensorboard", "wandb"}, "not supported yet: --report_to wandb"},
      {{"--train_sampling_strategy", "batch_rebalance"},
       "not supported yet: --train_sampling_strategy batch_rebalance (available: random, "
       "sequential, group_by_length)"},
  };
  for (const auto& [tokens, expected] : cases) {
    const std::string message = parse_error(tokens, /*not_supported=*/true);
    EXPECT_EQ(message.rfind(expected, 0), 0u)
        << joined(tokens) << "\n  expected prefix: " << expected << "\n  got: " << message;
  }
}

// ---- derived defaults --------------------------------------------------------------------------

TEST(TrainingArgumentsTest, DerivedDefaultsFollowTransformers) {
  const TrainingArguments steps = parse_ok({"--eval_strategy", "steps"});
  EXPECT_TRUE(steps.do_eval);
  EXPECT_EQ(steps.eval_steps, 500.0);  // logging_steps
  EXPECT_EQ(parse_ok({"--eval_strategy", "steps", "--logging_steps", "10"}).eval_steps, 10.0);
  EXPECT_EQ(parse_ok({"--eval_strategy", "steps", "--eval_steps", "0", "--logging_steps", "0.1"})
                .eval_steps,
            0.1);
  EXPECT_EQ(parse_ok({"--eval_strategy", "steps", "--eval_steps", "7"}).eval_steps, 7.0);
  EXPECT_FALSE(parse_ok({"--eval_steps", "7"}).do_eval);

  EXPECT_EQ(parse_ok({"--output_dir", "runs/a"}).run_name, "runs/a");
  EXPECT_EQ(parse_ok({"--output_dir", "runs/a", "--run_name", "exp"}).run_name, "exp");

  EXPECT_EQ(parse_ok({"--metric_for_best_model", "accuracy"}).greater_is_better, true);
  EXPECT_EQ(parse_ok({"--metric_for_best_model", "eval_loss"}).greater_is_better, false);
  EXPECT_EQ(parse_ok({"--metric_for_best_model", "accuracy", "--greater_is_better", "false"})
                .greater_is_better,
            false);
  EXPECT_EQ(parse_ok({}).greater_is_better, std::nullopt);

  // --group_by_length (transformers 4) and train_sampling_strategy (5) stay consistent.
  const TrainingArguments grouped = parse_ok({"--group_by_length"});
  EXPECT_EQ(grouped.train_sampling_strategy, TrainSamplingStrategy::kGroupByLength);
  const TrainingArguments grouped5 = parse_ok({"--train_sampling_strategy", "group_by_length"});
  EXPECT_TRUE(grouped5.group_by_length);
  const TrainingArguments sequential = parse_ok({"--train_sampling_strategy", "sequential"});
  EXPECT_EQ(sequential.train_sampling_strategy, TrainSamplingStrategy::kSequential);
  EXPECT_FALSE(sequential.group_by_length);
  TrainingArguments revalidated = grouped;
  EXPECT_NO_THROW(revalidated.validate());  // idempotent
  EXPECT_EQ(revalidated.train_sampling_strategy, TrainSamplingStrategy::kGroupByLength);

  TrainingArguments best;
  best.load_best_model_at_end = true;
  best.eval_strategy = IntervalStrategy::kSteps;  // must match the default save_strategy
  EXPECT_NO_THROW(best.validate());
  EXPECT_EQ(best.metric_for_best_model, "loss");
  EXPECT_EQ(best.greater_is_better, false);
}

}  // namespace training_args_validation_test
}  // namespace ctrainer
