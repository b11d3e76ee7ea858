// --fsdp / --fsdp_config (distributed/fsdp_config.h), the files as validate() reads them
// (trainer/args/sharding_files.h) and the sharding glue (trainer/sharding/sharding_config.h):
// transformers 5.24's readings, contradictions, refusals; each file read once.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include <ctrainer/trainer/args/sharding_files.h>
#include <ctrainer/trainer/sharding/sharding_config.h>

#include "support/expect_error.h"

namespace ctrainer {
namespace fsdp_config_test {
using json = nlohmann::json;
using testing::expect_error;

const std::filesystem::path kData = std::filesystem::path(CTRAINER_TEST_DATA_DIR) / "deepspeed";

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ctrainer_fsdp_test_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(Fsdp, LegacyWordsMapToShardingStages) {
  EXPECT_EQ(parse_fsdp("full_shard", json::object()).options.stage, ShardingStage::kParameters);
  EXPECT_EQ(parse_fsdp("shard_grad_op", json::object()).options.stage, ShardingStage::kGradients);
  EXPECT_EQ(parse_fsdp("true", json::object()).options.stage, ShardingStage::kParameters);
  const json v1{{"version", 1}};
  EXPECT_EQ(parse_fsdp("no_shard", v1).options.stage, ShardingStage::kNone);
  const FsdpSetup hybrid = parse_fsdp("hybrid_shard auto_wrap", v1);
  EXPECT_EQ(hybrid.options.stage, ShardingStage::kParameters);
  EXPECT_TRUE(hybrid.options.hybrid);
  const FsdpSetup hybrid2 = parse_fsdp("hybrid_shard_zero2", v1);
  EXPECT_EQ(hybrid2.options.stage, ShardingStage::kGradients);
  EXPECT_TRUE(hybrid2.options.hybrid);
  EXPECT_FALSE(parse_fsdp("full_shard", json::object()).options.hybrid);
}

TEST(Fsdp, OffloadMovesOptimizerAndParameters) {
  const FsdpSetup s = parse_fsdp("full_shard offload auto_wrap", json::object());
  EXPECT_TRUE(s.options.offload_optimizer);
  EXPECT_TRUE(s.options.offload_params);
  EXPECT_FALSE(parse_fsdp("full_shard", json::object()).options.offload_optimizer);
  EXPECT_TRUE(parse_fsdp("true", json{{"cpu_offload", true}}).options.offload_params);
}

TEST(Fsdp, FsdpOneOnlyStrategiesNeedVersionOne) {
  expect_error([] { parse_fsdp("hybrid_shard", json::object()); },
               {"--fsdp hybrid_shard", "only available with FSDP1", "\"version\": 1"});
  expect_error([] { parse_fsdp("no_shard", json::object()); }, {"only available with FSDP1"});
}

TEST(Fsdp, ContradictionsAreRefused) {
  expect_error(
      [] {
        parse_fsdp("full_shard no_shard", json{{"version", 1}});
      },
      {"--fsdp full_shard contradicts --fsdp no_shard"});
  expect_error(
      [] {
        parse_fsdp("full_shard", json{{"reshard_after_forward", false}});
      },
      {"--fsdp full_shard contradicts", "reshard_after_forward"});
  expect_error(
      [] {
        parse_fsdp("true",
                   json{{"min_num_params", 1000}, {"transformer_layer_cls_to_wrap", "BertLayer"}});
      },
      {"min_num_params", "mutually exclusive"});
  expect_error(
      [] {
        parse_fsdp("true", json{{"min_num_params", 1000}});
      },
      {"min_num_params", "SIZE_BASED_WRAP"});
  expect_error([] { parse_fsdp("shard_everything", json::object()); },
               {"--fsdp: unknown option 'shard_everything'"});
}

TEST(Fsdp, KeysAreNormalisedLikeTransformers) {
  const FsdpSetup s = parse_fsdp("true", json{{"fsdp_transformer_layer_cls_to_wrap", "BertLayer"},
                                              {"fsdp_backward_prefetch", "backward_post"},
                                              {"forward_prefetch", "true"},
                                              {"limit_all_gathers", false},
                                              {"fsdp_state_dict_type", "SHARDED_STATE_DICT"},
                                              {"use_orig_params", true},
                                              {"fsdp_activation_checkpointing", true}});
  EXPECT_EQ(s.options.wrap_layer_classes, std::vector<std::string>{"BertLayer"});
  EXPECT_EQ(s.config["transformer_layer_cls_to_wrap"], "BertLayer");
  EXPECT_EQ(s.config["min_num_params"], 0);
  EXPECT_EQ(s.options.backward_prefetch, BackwardPrefetch::kBackwardPost);
  EXPECT_TRUE(s.options.forward_prefetch);
  EXPECT_FALSE(s.options.limit_all_gathers);
  EXPECT_EQ(s.options.state_dict_type, ShardedStateDictType::kSharded);
  EXPECT_TRUE(s.activation_checkpointing);
  // transformers' default state_dict_type is FULL_STATE_DICT.
  EXPECT_EQ(parse_fsdp("true", json::object()).options.state_dict_type,
            ShardedStateDictType::kFull);
  const FsdpSetup sized =
      parse_fsdp("true", json{{"auto_wrap_policy", "SIZE_BASED_WRAP"}, {"min_num_params", 1e6}});
  EXPECT_EQ(sized.options.wrap_min_num_params, 1'000'000);
  const FsdpSetup listed = parse_fsdp("true", json{{"transformer_layer_cls_to_wrap", {"A", "B"}}});
  EXPECT_EQ(listed.options.wrap_layer_classes, (std::vector<std::string>{"A", "B"}));
  EXPECT_FALSE(listed.options.wrap_model_layers);
  EXPECT_FALSE(sized.options.wrap_model_layers);
  // Neither: the model's own layer classes (accelerate's _no_split_modules fallback).
  const FsdpSetup unnamed = parse_fsdp("full_shard auto_wrap", json::object());
  EXPECT_TRUE(unnamed.options.wrap_layer_classes.empty());
  EXPECT_TRUE(unnamed.options.wrap_model_layers);
  EXPECT_FALSE(parse_fsdp("true", json{{"auto_wrap_policy", "NO_WRAP"}}).options.wrap_model_layers);
}

TEST(Fsdp, UnknownAndUnsupportedKeysAreNamed) {
  expect_error(
      [] {
        parse_fsdp("true", json{{"fsdp_min_num_param", 10}});
      },
      {"min_num_param is not an fsdp_config key", "min_num_params"});
  expect_error([] { parse_fsdp("true", json{{"xla", true}}); }, {"xla", "XLA"});
  EXPECT_NO_THROW(parse_fsdp("true", json{{"xla", false}}));
  expect_error(
      [] {
        parse_fsdp("true", json{{"state_dict_type", "LOCAL_STATE_DICT"}});
      },
      {"LOCAL_STATE_DICT"});
  expect_error([] { parse_fsdp("true", json{{"version", 3}}); }, {"version", "1 (FSDP1)"});
  expect_error(
      [] {
        parse_fsdp("true", json{{"min_num_params", 1}, {"fsdp_min_num_params", 1}});
      },
      {"given twice"});
}

TEST(Fsdp, ConfigFileErrors) {
  const std::string bad = write_temp("bad.json", "{\n  \"version\": 2,\n  \"xla\" false\n}\n");
  expect_error([&] { read_fsdp_config(bad); }, {"--fsdp_config", "bad.json:3:9: invalid JSON"});
  // transformers 5 parses a value that starts with '{' as inline JSON (its _VALID_DICT_FIELDS).
  EXPECT_EQ(read_fsdp_config(R"({"version": 2, "transformer_layer_cls_to_wrap": ["GPT2Block"]})"),
            (nlohmann::json{{"version", 2}, {"transformer_layer_cls_to_wrap", {"GPT2Block"}}}));
  expect_error([] { read_fsdp_config("{\"version\": 2,\n \"xla\" false}"); },
               {"--fsdp_config inline JSON:2:8: invalid JSON"});
  expect_error([] { read_fsdp_config("version.json"); },
               {"--fsdp_config version.json: no such file"});
}

TEST(Fsdp, ValuesOfTheWrongTypeOrRange) {
  // Found by fuzz/fsdp_config_fuzzer.cpp (fuzz/corpus/fsdp_config/): a float min_num_params
  // beyond int64, strings that are numbers, a version that only truncates to 1.
  expect_error(
      [] {
        parse_fsdp("true", json{{"auto_wrap_policy", "SIZE_BASED_WRAP"}, {"min_num_params", 1e54}});
      },
      {"min_num_params", "[0, 2^63)"});
  expect_error(
      [] {
        parse_fsdp("true", json{{"auto_wrap_policy", 5}});
      },
      {"auto_wrap_policy must be a string, got 5"});
  expect_error(
      [] {
        parse_fsdp("true", json{{"state_dict_type", true}});
      },
      {"state_dict_type must be a string"});
  expect_error([] { parse_fsdp("true", json{{"version", 4294967297}}); }, {"version", "must be 1"});
}

TEST(ShardingArguments, ValidateRefusesWhatTransformersRefuses) {
  TrainingArguments args;
  args.fsdp = "full_shard";
  args.deepspeed = (kData / "ds_config_zero2.json").string();
  expect_error([&] { args.validate(); },
               {"Using --fsdp xxx together with --deepspeed is not possible"});

  TrainingArguments config_only;
  config_only.fsdp_config = write_temp("ok.json", "{}");
  expect_error([&] { config_only.validate(); }, {"--fsdp_config", "only read with --fsdp"});

  TrainingArguments broken;
  broken.deepspeed = (kData / "malformed.json").string();
  expect_error([&] { broken.validate(); }, {"malformed.json:5:9"});

  TrainingArguments fine;
  fine.deepspeed = (kData / "ds_config_zero3.json").string();
  EXPECT_NO_THROW(fine.validate());
  TrainingArguments fsdp;
  fsdp.fsdp = "full_shard offload";
  EXPECT_NO_THROW(fsdp.validate());
}

struct TinyModel : Model {
  ModelOutput forward(const Batch&) override { return {}; }
  std::optional<json> config() const override { return json{{"hidden_size", 64}}; }
};

TEST(ShardingSetup, DeepSpeedResolvesOptionsAndArguments) {
  TrainingArguments args;
  args.deepspeed = (kData / "ds_config_zero3.json").string();
  args.max_grad_norm = 0.7;
  ProcessInfo process;
  process.world_size = 2;
  TinyModel model;
  ShardingSetup setup = resolve_sharding(args, process, model);
  EXPECT_EQ(setup.options.stage, ShardingStage::kParameters);
  EXPECT_TRUE(setup.options.offload_optimizer && setup.options.offload_params);
  EXPECT_EQ(setup.options.reduce_bucket_elements, 64 * 64);
  EXPECT_EQ(setup.options.param_persistence_threshold, 640);
  EXPECT_TRUE(setup.options.gather_16bit_weights_on_model_save);
  ASSERT_TRUE(setup.deepspeed_settings);
  EXPECT_EQ(setup.deepspeed_settings->max_grad_norm, 0.7);  // gradient_clipping "auto"
  EXPECT_EQ(setup.deepspeed->config()["train_batch_size"], 16);
  finalize_sharding(setup, args, model, 30);
  EXPECT_EQ(setup.deepspeed->config()["scheduler"]["params"]["warmup_num_steps"], 1);

  // The same config given inline, as transformers 5 accepts it, resolves the same way.
  TrainingArguments inline_args = args;
  std::ifstream file(kData / "ds_config_zero3.json");
  inline_args.deepspeed = nlohmann::json::parse(file).dump();
  ShardingSetup from_inline = resolve_sharding(inline_args, process, model);
  finalize_sharding(from_inline, inline_args, model, 30);
  EXPECT_EQ(from_inline.deepspeed->config(), setup.deepspeed->config());
  EXPECT_EQ(from_inline.options.param_persistence_threshold, 640);
  inline_args.deepspeed = R"({"zero_optimization": {"stage": 3}, "bogus": 1})";
  expect_error([&] { resolve_sharding(inline_args, process, model); },
               {"--deepspeed (inline JSON)", "bogus"});

  TrainingArguments fp16_args;
  fp16_args.deepspeed = (kData / "fp16_static.json").string();
  fp16_args.fp16_full_eval = true;  // transformers: fp16.enabled follows fp16|fp16_full_eval
  ShardingSetup fp16 = resolve_sharding(fp16_args, process, model);
  EXPECT_TRUE(fp16_args.fp16);
  ASSERT_TRUE(fp16.deepspeed_settings->loss_scaling);
  EXPECT_EQ(fp16.deepspeed_settings->loss_scaling->policy, GradScalerOptions::Policy::kDeepSpeed);
  EXPECT_EQ(fp16.deepspeed_settings->loss_scaling->loss_scale, 128);
  EXPECT_EQ(fp16_args.max_grad_norm, 0.0);  // no gradient_clipping: DeepSpeed clips nothing
}

// DeepSpeed's 16-bit modes store the model in 16 bits under a ZeRO stage (fp32 masters in the
// sharded optimizer); stage 0 (DDP) and --fsdp keep fp32 parameters and autocast.
TEST(ShardingSetup, DeepSpeed16BitModesStoreTheParametersIn16BitsUnderZero) {
  TinyModel model;
  ProcessInfo process;
  process.world_size = 2;
  TrainingArguments bf16_args;
  // No bf16 section: --bf16 decides (Accelerate adds one for it).
  bf16_args.deepspeed = (kData / "ds_config_zero3.json").string();
  bf16_args.bf16 = true;
  EXPECT_EQ(resolve_sharding(bf16_args, process, model).options.parameter_dtype, at::kBFloat16);
  TrainingArguments fp32_args;
  fp32_args.deepspeed = bf16_args.deepspeed;
  EXPECT_EQ(resolve_sharding(fp32_args, process, model).options.parameter_dtype, at::kFloat);
  TrainingArguments stage0;
  stage0.deepspeed = (kData / "fp16_static.json").string();  // fp16 enabled, stage 0
  EXPECT_EQ(resolve_sharding(stage0, process, model).options.parameter_dtype, at::kFloat);
  TrainingArguments fsdp;
  fsdp.fsdp = "full_shard";
  fsdp.bf16 = true;
  EXPECT_EQ(resolve_sharding(fsdp, process, model).options.parameter_dtype, at::kFloat);
}

TEST(ShardingSetup, FsdpNeedsSeveralProcessesAndTurnsOnCheckpointing) {
  TinyModel model;
  TrainingArguments args;
  args.fsdp = "full_shard";
  expect_error([&] { resolve_sharding(args, ProcessInfo{}, model); },
               {"only works in distributed training"});
  // One process started by a launcher (an elastic job that shrank to one node) is distributed
  // training for transformers too.
  ProcessInfo alone;
  alone.launched_by = LaunchEnvironment::kTorchrun;
  EXPECT_EQ(resolve_sharding(args, alone, model).options.stage, ShardingStage::kParameters);
  ProcessInfo two;
  two.world_size = 2;
  args.fsdp_config = write_temp("ckpt.json", R"({"fsdp_activation_checkpointing": true})");
  const ShardingSetup setup = resolve_sharding(args, two, model);
  EXPECT_EQ(setup.options.stage, ShardingStage::kParameters);
  EXPECT_TRUE(args.gradient_checkpointing);
  TrainingArguments none;
  EXPECT_FALSE(resolve_sharding(none, two, model).enabled());
}

// The files are read once, by validate(): the Trainer resolves what was read, even when the file
// has changed (or gone) since; changing a flag reads again.
TEST(ShardingFiles, ValidateReadsEachFileOnceAndTheTrainerResolvesWhatItRead) {
  const std::string path = write_temp("once.json", R"({"zero_optimization": {"stage": 2},
      "train_micro_batch_size_per_gpu": "auto"})");
  TrainingArguments args;
  args.deepspeed = path;
  args.validate();
  ASSERT_TRUE(args.sharding_files);
  const ShardingFiles* read = args.sharding_files.get();
  std::ofstream(path) << "{ this is no longer JSON";
  args.validate();  // the Trainer validates again: nothing is re-read
  EXPECT_EQ(args.sharding_files.get(), read);
  ProcessInfo two;
  two.world_size = 2;
  TinyModel model;
  TrainingArguments copy = args;  // the Trainer keeps a copy
  EXPECT_EQ(resolve_sharding(copy, two, model).options.stage, ShardingStage::kGradients);

  // Another file: read now, and its error names it.
  copy.deepspeed = write_temp("broken.json", "{ \"zero_optimization\": ");
  expect_error([&] { resolve_sharding(copy, two, model); }, {"broken.json"});
  expect_error([&] { copy.validate(); }, {"broken.json"});

  TrainingArguments fsdp;
  fsdp.fsdp = "shard_grad_op";
  fsdp.fsdp_config = write_temp("fsdp_once.json", R"({"fsdp_activation_checkpointing": true})");
  fsdp.validate();
  std::filesystem::remove(*fsdp.fsdp_config);
  const ShardingSetup setup = resolve_sharding(fsdp, two, model);
  EXPECT_EQ(setup.options.stage, ShardingStage::kGradients);
  EXPECT_TRUE(fsdp.gradient_checkpointing);
}

}  // namespace fsdp_config_test
}  // namespace ctrainer
