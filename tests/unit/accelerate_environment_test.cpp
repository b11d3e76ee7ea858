// What `accelerate launch` exports to the program, read as HF's TrainingArguments reads it:
// ACCELERATE_MIXED_PRECISION turns on bf16 / fp16 unless a flag already turned one on (even
// `--bf16 false` leaves it on, as HF's `self.mixed_precision = env; if self.fp16: ...` does),
// ACCELERATE_USE_CPU as --use_cpu, accelerate's FSDP plugin (ACCELERATE_USE_FSDP, FSDP_*) as
// --fsdp with the fsdp_config transformers would pass, and the plugins our programs cannot take
// from the environment (DeepSpeed without --deepspeed, Megatron-LM, dynamo, debug) refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/distributed/sharding_options.h>
#include <ctrainer/integrations/accelerate/accelerate_environment.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/sharding_files.h>

#include "support/expect_error.h"
#include "support/parse_args.h"

namespace ctrainer {
namespace accelerate_environment_test {

using testing::expect_error;
using testing::run_parse;

TrainingArguments parse_with(const EnvironmentMap& environment,
                             const std::vector<std::string>& tokens = {}) {
  ArgumentParser parser("test");
  parser.set_environment(environment);
  TrainingArguments args;
  EXPECT_TRUE(run_parse(parser, tokens, args));
  return args;
}

void expect_refused(const EnvironmentMap& environment, const std::vector<std::string>& parts,
                    const std::vector<std::string>& tokens = {}) {
  expect_error(
      [&] {
        ArgumentParser parser("test");
        parser.set_environment(environment);
        TrainingArguments args;
        run_parse(parser, tokens, args);
      },
      parts);
}

TEST(AccelerateEnvironment, MixedPrecisionUnlessAFlagTurnedOneOn) {
  const TrainingArguments bf16 = parse_with({{"ACCELERATE_MIXED_PRECISION", "bf16"}});
  EXPECT_TRUE(bf16.bf16);
  EXPECT_FALSE(bf16.fp16);
  const TrainingArguments fp16 = parse_with({{"ACCELERATE_MIXED_PRECISION", "FP16"}});
  EXPECT_TRUE(fp16.fp16);
  EXPECT_FALSE(fp16.bf16);
  // A flag that turns one on wins.
  const TrainingArguments flag = parse_with({{"ACCELERATE_MIXED_PRECISION", "bf16"}}, {"--fp16"});
  EXPECT_TRUE(flag.fp16);
  EXPECT_FALSE(flag.bf16);
  // `--bf16 false` is HF's default value: the variable still decides.
  EXPECT_TRUE(parse_with({{"ACCELERATE_MIXED_PRECISION", "bf16"}}, {"--bf16", "false"}).bf16);
  const TrainingArguments none = parse_with({{"ACCELERATE_MIXED_PRECISION", "no"}});
  EXPECT_FALSE(none.bf16 || none.fp16);
  EXPECT_FALSE(parse_with({}).bf16);
}

TEST(AccelerateEnvironment, UseCpuIsUseCpu) {
  EXPECT_TRUE(parse_with({{"ACCELERATE_USE_CPU", "True"}}).on_cpu_requested());
  EXPECT_TRUE(parse_with({{"ACCELERATE_USE_CPU", "1"}}, {"--use_cpu", "false"}).on_cpu_requested());
  EXPECT_FALSE(parse_with({{"ACCELERATE_USE_CPU", "False"}}).on_cpu_requested());
  EXPECT_FALSE(parse_with({{"ACCELERATE_USE_CPU", "off"}}).on_cpu_requested());
  // accelerate launch sets these on every launch; they change nothing.
  const TrainingArguments plain = parse_with({{"ACCELERATE_DYNAMO_BACKEND", "NO"},
                                              {"ACCELERATE_DYNAMO_MODE", "default"},
                                              {"ACCELERATE_USE_FSDP", "false"},
                                              {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4"}});
  EXPECT_EQ(plain.gradient_accumulation_steps, 1);  // HF's Trainer ignores the variable too
}

TEST(AccelerateEnvironment, WhatOurProgramsCannotTakeIsRefusedByName) {
  expect_refused({{"ACCELERATE_MIXED_PRECISION", "fp8"}},
                 {"not supported yet: ACCELERATE_MIXED_PRECISION=fp8"});
  expect_refused({{"ACCELERATE_MIXED_PRECISION", "half"}},
                 {"ACCELERATE_MIXED_PRECISION='half' is not one of no, fp16, bf16, fp8"});
  expect_refused({{"ACCELERATE_USE_CPU", "maybe"}},
                 {"ACCELERATE_USE_CPU='maybe' is not a truth value"});
  expect_refused({{"ACCELERATE_USE_FSDP", "true"}, {"FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD", "1"}},
                 {"not supported yet: FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD=true"});
  expect_refused({{"ACCELERATE_USE_FSDP", "true"}, {"FSDP_SHARDING_STRATEGY", "6"}},
                 {"FSDP_SHARDING_STRATEGY='6' is not one of FULL_SHARD"});
  expect_refused({{"ACCELERATE_USE_FSDP", "true"}, {"FSDP_STATE_DICT_TYPE", "LOCAL_STATE_DICT"}},
                 {"LOCAL_STATE_DICT"});
  expect_refused({{"ACCELERATE_USE_FSDP", "true"}}, {"--fsdp_config without --fsdp"},
                 {"--fsdp_config", R"({"version": 1})"});
  expect_refused({{"ACCELERATE_USE_DEEPSPEED", "true"}},
                 {"ACCELERATE_USE_DEEPSPEED=true without --deepspeed", "--deepspeed"});
  expect_refused({{"ACCELERATE_USE_MEGATRON_LM", "TRUE"}}, {"ACCELERATE_USE_MEGATRON_LM=true"});
  expect_refused({{"ACCELERATE_DYNAMO_BACKEND", "INDUCTOR"}},
                 {"ACCELERATE_DYNAMO_BACKEND=INDUCTOR", "torch.compile"});
  expect_refused({{"ACCELERATE_DEBUG_MODE", "true"}}, {"ACCELERATE_DEBUG_MODE=true"});
}

// What accelerate launch exports for the FSDP config of HF's Trainer documentation
// (prepare_multi_gpu_env), read with the defaults of accelerate's FSDP plugin.
const EnvironmentMap kFsdpLaunch = {{"ACCELERATE_USE_FSDP", "true"},
                                    {"FSDP_VERSION", "1"},
                                    {"FSDP_SHARDING_STRATEGY", "1"},
                                    {"FSDP_RESHARD_AFTER_FORWARD", "true"},
                                    {"FSDP_OFFLOAD_PARAMS", "false"},
                                    {"FSDP_MIN_NUM_PARAMS", "100000000"},
                                    {"FSDP_AUTO_WRAP_POLICY", "TRANSFORMER_BASED_WRAP"},
                                    {"FSDP_TRANSFORMER_CLS_TO_WRAP", "BertLayer"},
                                    {"FSDP_BACKWARD_PREFETCH", "BACKWARD_PRE"},
                                    {"FSDP_STATE_DICT_TYPE", "FULL_STATE_DICT"},
                                    {"FSDP_FORWARD_PREFETCH", "true"},
                                    {"FSDP_USE_ORIG_PARAMS", "true"},
                                    {"FSDP_CPU_RAM_EFFICIENT_LOADING", "true"},
                                    {"FSDP_SYNC_MODULE_STATES", "true"},
                                    {"FSDP_ACTIVATION_CHECKPOINTING", "false"},
                                    {"FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD", "false"}};

TEST(AccelerateEnvironment, FsdpVariablesBecomeTheFsdpConfigTransformersWouldPass) {
  const auto launch = read_accelerate_environment(kFsdpLaunch);
  ASSERT_TRUE(launch.fsdp_config.has_value());
  EXPECT_EQ(*launch.fsdp_config, nlohmann::json::parse(R"({"version": 1,
      "reshard_after_forward": "full_shard", "use_orig_params": true,
      "backward_prefetch": "BACKWARD_PRE", "cpu_offload": false,
      "auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "transformer_layer_cls_to_wrap": ["BertLayer"],
      "forward_prefetch": true, "sync_module_states": true, "cpu_ram_efficient_loading": true,
      "activation_checkpointing": false, "state_dict_type": "FULL_STATE_DICT"})"));
  const TrainingArguments args = parse_with(kFsdpLaunch);
  EXPECT_EQ(args.fsdp, "true");
  ASSERT_TRUE(args.sharding_files && args.sharding_files->fsdp_setup);
  const ShardingOptions& options = args.sharding_files->fsdp_setup->options;
  EXPECT_EQ(options.stage, ShardingStage::kParameters);
  EXPECT_EQ(options.wrap_layer_classes, std::vector<std::string>{"BertLayer"});
  EXPECT_FALSE(options.offload_params);
  // Numbers or names, any case; FSDP2 reads FSDP_RESHARD_AFTER_FORWARD; offload; size wrap.
  EnvironmentMap zero2 = {{"ACCELERATE_USE_FSDP", "TRUE"},
                          {"FSDP_SHARDING_STRATEGY", "shard_grad_op"},
                          {"FSDP_OFFLOAD_PARAMS", "true"},
                          {"FSDP_AUTO_WRAP_POLICY", "SIZE_BASED_WRAP"},
                          {"FSDP_MIN_NUM_PARAMS", "1000"}};
  const auto size_wrap = parse_with(zero2).sharding_files->fsdp_setup->options;
  EXPECT_EQ(size_wrap.stage, ShardingStage::kGradients);
  EXPECT_TRUE(size_wrap.offload_params);
  EXPECT_EQ(size_wrap.wrap_min_num_params, 1000);
  const auto fsdp2 = read_accelerate_environment({{"ACCELERATE_USE_FSDP", "true"},
                                                  {"FSDP_VERSION", "2"},
                                                  {"FSDP_RESHARD_AFTER_FORWARD", "false"},
                                                  {"FSDP_SHARDING_STRATEGY", "1"}});
  EXPECT_EQ(fsdp2.fsdp_config->at("reshard_after_forward"), false);
  EXPECT_FALSE(fsdp2.fsdp_config->contains("backward_prefetch"));
  // --fsdp given: the flags decide, as HF's Trainer hands accelerate its own plugin.
  const TrainingArguments flags = parse_with(kFsdpLaunch, {"--fsdp", "shard_grad_op"});
  EXPECT_EQ(flags.fsdp, "shard_grad_op");
  EXPECT_EQ(flags.sharding_files->fsdp_setup->options.stage, ShardingStage::kGradients);
}

TEST(AccelerateEnvironment, DeepSpeedWithItsConfigFileGiven) {
  const std::string config =
      (std::filesystem::path(CTRAINER_TEST_DATA_DIR) / "deepspeed" / "ds_config_zero3.json")
          .string();
  const TrainingArguments args =
      parse_with({{"ACCELERATE_USE_DEEPSPEED", "true"}}, {"--deepspeed", config});
  EXPECT_EQ(args.deepspeed, config);
}

}  // namespace accelerate_environment_test
}  // namespace ctrainer
