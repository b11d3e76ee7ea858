// What `accelerate launch` exports to the program, read as HF's TrainingArguments reads it:
// ACCELERATE_MIXED_PRECISION turns on bf16 / fp16 unless a flag already turned one on (even
// `--bf16 false` leaves it on, as HF's `self.mixed_precision = env; if self.fp16: ...` does),
// ACCELERATE_USE_CPU as --use_cpu, accelerate's FSDP plugin (ACCELERATE_USE_FSDP, FSDP_*) as
// --fsdp with the fsdp_config transformers would pass, accelerate's DeepSpeed plugin
// (ACCELERATE_USE_DEEPSPEED, ACCELERATE_DEEPSPEED_*) as --deepspeed with the plugin's config, and
// what our programs cannot take from the environment (Megatron-LM, dynamo, debug) refused.
// parity.accelerate_deepspeed_plugin compares the plugin's config with accelerate's own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/distributed/sharding_options.h>
#include <ctrainer/integrations/accelerate/accelerate_deepspeed_plugin.h>
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
  expect_refused({{"ACCELERATE_USE_DEEPSPEED", "true"}, {"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3.0"}},
                 {"ACCELERATE_DEEPSPEED_ZERO_STAGE='3.0' is not a whole number"});
  expect_refused({{"ACCELERATE_USE_DEEPSPEED", "true"}, {"ACCELERATE_USE_FSDP", "true"}},
                 {"ACCELERATE_USE_DEEPSPEED=true and ACCELERATE_USE_FSDP=true"});
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

// What accelerate launch exports for a ZeRO-3 accelerate config without a DeepSpeed file
// (prepare_deepspeed_cmd_env), as accelerate's DeepSpeedPlugin builds its config from it.
const EnvironmentMap kDeepSpeedLaunch = {
    {"ACCELERATE_USE_DEEPSPEED", "true"},
    {"ACCELERATE_CONFIG_DS_FIELDS",
     "gradient_accumulation_steps,gradient_clipping,offload_optimizer_device,"
     "offload_param_device,zero3_init_flag,zero3_save_16bit_model,zero_stage,mixed_precision"},
    {"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"},
    {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "2"},
    {"ACCELERATE_GRADIENT_CLIPPING", "1.0"},
    {"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "none"},
    {"ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "none"},
    {"ACCELERATE_DEEPSPEED_ZERO3_INIT", "true"},
    {"ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "true"},
    {"ACCELERATE_MIXED_PRECISION", "bf16"}};

TEST(AccelerateEnvironment, DeepSpeedPluginFromTheVariables) {
  const TrainingArguments args =
      parse_with(kDeepSpeedLaunch, {"--gradient_accumulation_steps", "2"});
  ASSERT_TRUE(args.deepspeed.has_value());
  EXPECT_TRUE(args.bf16);
  const nlohmann::json expected = nlohmann::json::parse(R"({
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
    "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "none", "nvme_path": null},
      "offload_param": {"device": "none", "nvme_path": null},
      "stage3_gather_16bit_weights_on_model_save": true},
    "bf16": {"enabled": true}, "fp16": {"enabled": false}})");
  EXPECT_EQ(nlohmann::json::parse(*args.deepspeed), expected);
  ASSERT_TRUE(args.sharding_files && args.sharding_files->deepspeed_config);
  // (The plugin's gradient accumulation must agree with the flag, as transformers checks it
  // when the Trainer starts: parity.accelerate_launch_vs_flags runs that.)
  // --deepspeed given: its file wins and the variables are not read.
  const std::string file =
      (std::filesystem::path(CTRAINER_TEST_DATA_DIR) / "deepspeed" / "ds_config_zero3.json")
          .string();
  EXPECT_EQ(parse_with(kDeepSpeedLaunch, {"--deepspeed", file}).deepspeed, file);
  expect_refused(kDeepSpeedLaunch, {"--fsdp full_shard", "ACCELERATE_USE_DEEPSPEED=true"},
                 {"--gradient_accumulation_steps", "2", "--fsdp", "full_shard"});
}

TEST(AccelerateEnvironment, DeepSpeedPluginFromAConfigFile) {
  const std::filesystem::path folder =
      std::filesystem::path(::testing::TempDir()) / "accelerate_deepspeed_file";
  std::filesystem::create_directories(folder);
  const std::string file = (folder / "ds.json").string();
  std::ofstream(file)
      << R"({"zero_optimization": {"stage": "auto", "offload_optimizer": {"device": "auto"}},
                             "gradient_clipping": 0.5, "train_micro_batch_size_per_gpu": "auto"})";
  EnvironmentMap launch = {{"ACCELERATE_USE_DEEPSPEED", "true"},
                           {"ACCELERATE_DEEPSPEED_CONFIG_FILE", file},
                           {"ACCELERATE_CONFIG_DS_FIELDS", "deepspeed_config_file,zero3_init_flag"},
                           {"ACCELERATE_DEEPSPEED_ZERO_STAGE", "1"}};
  nlohmann::json config = accelerate_deepspeed_plugin_config(launch);
  // "auto" at the plugin's keys filled from the variables (stage 1, device "none"), the rest
  // kept; gradient_accumulation_steps 1 added.
  EXPECT_EQ(config.at("zero_optimization").at("stage"), 1);
  EXPECT_EQ(config.at("zero_optimization").at("offload_optimizer").at("device"), "none");
  EXPECT_EQ(config.at("gradient_clipping"), 0.5);
  EXPECT_EQ(config.at("gradient_accumulation_steps"), 1);
  EXPECT_EQ(config.at("train_micro_batch_size_per_gpu"), "auto");
  apply_deepspeed_mixed_precision(config, "fp16");
  EXPECT_EQ(config.at("fp16"), nlohmann::json::parse(R"({"enabled": true, "auto_cast": true})"));
  EXPECT_EQ(config.at("bf16"), nlohmann::json::parse(R"({"enabled": false})"));
  nlohmann::json both = {{"zero_optimization", {{"stage", 2}}}, {"bf16", {{"enabled", "True"}}}};
  expect_error([&] { apply_deepspeed_mixed_precision(both, "fp16"); },
               {"mixed precision fp16", "\"bf16\" enabled"});
  // Settings the file replaces may not come from the accelerate config too.
  launch["ACCELERATE_CONFIG_DS_FIELDS"] = "deepspeed_config_file,zero_stage";
  expect_error([&] { accelerate_deepspeed_plugin_config(launch); },
               {"sets zero_stage next to deepspeed_config_file"});
  std::ofstream(file) << R"({"train_batch_size": 8})";
  launch["ACCELERATE_CONFIG_DS_FIELDS"] = "";
  expect_error([&] { accelerate_deepspeed_plugin_config(launch); },
               {"ACCELERATE_DEEPSPEED_CONFIG_FILE=", "no \"zero_optimization\""});
  launch["ACCELERATE_DEEPSPEED_CONFIG_FILE"] = (folder / "missing.json").string();
  expect_error([&] { accelerate_deepspeed_plugin_config(launch); }, {"missing.json: no such file"});
  std::filesystem::remove_all(folder);
}

}  // namespace accelerate_environment_test
}  // namespace ctrainer
