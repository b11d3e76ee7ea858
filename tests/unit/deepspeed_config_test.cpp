// DeepSpeedConfig (integrations/deepspeed_config.h): transformers' "auto" filling, mismatch
// reports, key checks and JSON errors. Golden values are what transformers 5.24's
// HfTrainerDeepSpeedConfig produces (parity.deepspeed_config checks the same against it).
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include <ctrainer/core/json_config.h>
#include <ctrainer/integrations/deepspeed_config.h>

#include "support/expect_error.h"

namespace ctrainer {
namespace deepspeed_config_test {
using json = nlohmann::json;
using testing::expect_error;

const std::filesystem::path kData = std::filesystem::path(CTRAINER_TEST_DATA_DIR) / "deepspeed";

DeepSpeedConfig processed(const std::string& file, const DeepSpeedTrainerArgs& args = {}) {
  DeepSpeedConfig ds = DeepSpeedConfig::from_file(kData / file);
  ds.trainer_config_process(args);
  return ds;
}

DeepSpeedConfig from_text(const std::string& text) {
  return DeepSpeedConfig(json::parse(text), "inline.json");
}

TEST(DeepSpeedConfig, HfGuideZero3AllAutoFilledAsTransformers) {
  DeepSpeedConfig ds = processed("ds_config_zero3.json");
  ds.trainer_config_finalize(128, 100, 0);
  const json& c = ds.config();
  EXPECT_EQ(c["train_micro_batch_size_per_gpu"], 8);
  EXPECT_EQ(c["gradient_accumulation_steps"], 1);
  EXPECT_EQ(c["train_batch_size"], 8);
  EXPECT_EQ(c["gradient_clipping"], 1.0);
  EXPECT_EQ(c["fp16"]["enabled"], false);
  EXPECT_EQ(c["optimizer"]["params"]["lr"], 5e-5);
  EXPECT_EQ(c["optimizer"]["params"]["betas"], json::array({0.9, 0.999}));
  EXPECT_EQ(c["optimizer"]["params"]["eps"], 1e-8);
  EXPECT_EQ(c["optimizer"]["params"]["weight_decay"], 0.0);
  EXPECT_EQ(c["scheduler"]["params"]["warmup_min_lr"], 0);
  EXPECT_EQ(c["scheduler"]["params"]["warmup_max_lr"], 5e-5);
  EXPECT_EQ(c["scheduler"]["params"]["warmup_num_steps"], 1);  // max(1, 0)
  EXPECT_FALSE(c["scheduler"]["params"].contains("total_num_steps"));
  EXPECT_EQ(c["zero_optimization"]["reduce_bucket_size"], 128 * 128);
  EXPECT_EQ(c["zero_optimization"]["stage3_prefetch_bucket_size"], 14745);  // int(0.9*128*128)
  EXPECT_EQ(c["zero_optimization"]["stage3_param_persistence_threshold"], 1280);
  EXPECT_EQ(ds.dtype(), DeepSpeedDtype::kFp32);

  const DeepSpeedZeroSettings zero = ds.zero();
  EXPECT_EQ(zero.stage, 3);
  EXPECT_TRUE(zero.offload_optimizer);
  EXPECT_TRUE(zero.offload_param);
  EXPECT_TRUE(zero.overlap_comm);
  EXPECT_EQ(zero.reduce_bucket_size, 16384);
  EXPECT_EQ(zero.param_persistence_threshold, 1280);
  EXPECT_TRUE(zero.gather_16bit_weights_on_model_save);
  ASSERT_TRUE(ds.optimizer());
  EXPECT_EQ(ds.optimizer()->type, "AdamW");
  ASSERT_TRUE(ds.scheduler());
  EXPECT_EQ(ds.scheduler()->type, "WarmupLR");
}

TEST(DeepSpeedConfig, HfGuideZero2WithWorldSizeAndAccumulation) {
  DeepSpeedTrainerArgs args;
  args.world_size = 4;
  args.per_device_train_batch_size = 2;
  args.gradient_accumulation_steps = 3;
  args.learning_rate = 1e-3;
  args.bf16 = true;
  DeepSpeedConfig ds = processed("ds_config_zero2.json", args);
  ds.trainer_config_finalize(std::nullopt, 50, 7);  // no "auto" needs the hidden size
  const json& c = ds.config();
  EXPECT_EQ(c["train_batch_size"], 24);
  EXPECT_EQ(c["bf16"]["enabled"], true);
  EXPECT_EQ(c["fp16"]["enabled"], false);
  EXPECT_EQ(c["scheduler"]["params"]["warmup_num_steps"], 7);
  EXPECT_EQ(c["scheduler"]["params"]["warmup_max_lr"], 1e-3);
  EXPECT_EQ(ds.dtype(), DeepSpeedDtype::kBf16);
  const DeepSpeedZeroSettings zero = ds.zero();
  EXPECT_EQ(zero.stage, 2);
  EXPECT_EQ(zero.reduce_bucket_size, 200'000'000);  // 2e8 as written
  EXPECT_TRUE(zero.offload_optimizer);
  EXPECT_FALSE(zero.offload_param);
}

TEST(DeepSpeedConfig, WarmupDecayTotalStepsAndHiddenSizeAtStage1) {
  DeepSpeedTrainerArgs args;
  args.world_size = 2;
  args.per_device_train_batch_size = 4;
  args.gradient_accumulation_steps = 2;
  args.max_grad_norm = 0.5;
  args.learning_rate = 3e-5;
  args.adam_epsilon = 1e-6;
  DeepSpeedConfig ds = processed("mixed_explicit_auto.json", args);
  ds.trainer_config_finalize(96, 333, 34);
  const json& c = ds.config();
  EXPECT_EQ(c["scheduler"]["params"]["total_num_steps"], 333);
  EXPECT_EQ(c["scheduler"]["params"]["warmup_num_steps"], 34);
  EXPECT_EQ(c["train_batch_size"], 16);
  EXPECT_EQ(c["zero_optimization"]["reduce_bucket_size"], 96 * 96);
  // Below stage 3 the stage-3 keys are not filled (and not present here).
  EXPECT_FALSE(c["zero_optimization"].contains("stage3_prefetch_bucket_size"));
  EXPECT_FALSE(ds.zero().overlap_comm);  // DeepSpeed's default below stage 3
}

TEST(DeepSpeedConfig, Fp16SectionGivesDeepSpeedLossScaling) {
  DeepSpeedTrainerArgs args;
  args.fp16 = true;
  DeepSpeedConfig ds = processed("fp16_static.json", args);
  ds.trainer_config_finalize(std::nullopt, 10, 0);
  EXPECT_EQ(ds.dtype(), DeepSpeedDtype::kFp16);
  const DeepSpeedLossScale s = ds.loss_scale();
  EXPECT_EQ(s.loss_scale, 128);
  EXPECT_EQ(s.initial_scale_power, 12);
  EXPECT_EQ(s.loss_scale_window, 500);
  EXPECT_EQ(s.hysteresis, 4);
  EXPECT_TRUE(s.consecutive_hysteresis);
  EXPECT_EQ(s.min_loss_scale, 0.5);
  EXPECT_FALSE(ds.gradient_clipping());  // absent: DeepSpeed clips nothing
}

TEST(DeepSpeedConfig, EveryMismatchInOneErrorInTransformersWords) {
  DeepSpeedConfig ds = processed("mismatches.json");
  try {
    ds.trainer_config_finalize(128, 500, 0);
    FAIL() << "no error";
  } catch (const ArgumentError& e) {
    const std::string what = e.what();
    const std::string expected =
        "Please correct the following DeepSpeed config values that mismatch TrainingArguments "
        "values:\n"
        "- ds train_micro_batch_size_per_gpu=16 vs hf per_device_train_batch_size=8\n"
        "- ds gradient_accumulation_steps=2 vs hf gradient_accumulation_steps=1\n"
        "- ds train_batch_size=64 vs hf train_batch_size (calculated)=8\n"
        "- ds gradient_clipping=2.0 vs hf max_grad_norm=1.0\n"
        "- ds optimizer.params.lr=0.001 vs hf learning_rate=5e-05\n"
        "- ds optimizer.params.betas=[0.8, 0.99] vs hf adam_beta1+adam_beta2=[0.9, 0.999]\n"
        "- ds optimizer.params.eps=1e-06 vs hf adam_epsilon=1e-08\n"
        "- ds optimizer.params.weight_decay=0.01 vs hf weight_decay=0.0\n"
        "- ds scheduler.params.warmup_max_lr=0.002 vs hf learning_rate=5e-05\n"
        "- ds fp16.enabled=True vs hf fp16|fp16_full_eval=False\n"
        "- ds scheduler.params.total_num_steps=1000 vs hf num_training_steps (calculated)=500\n"
        "- ds scheduler.params.warmup_num_steps=7 vs hf warmup_steps=1\n"
        "The easiest method is to set these DeepSpeed config values to 'auto'.";
    EXPECT_NE(what.find(expected), std::string::npos) << what;
    EXPECT_NE(what.find("mismatches.json"), std::string::npos) << what;
  }
}

TEST(DeepSpeedConfig, EqualValuesOfAnotherTypeAreNoMismatch) {
  // Python: 1 == 1.0; transformers reports neither of these.
  DeepSpeedConfig ds = from_text(R"({"gradient_clipping": 1, "fp16": {"enabled": false},
      "train_micro_batch_size_per_gpu": 8.0, "zero_optimization": {"stage": 0}})");
  ds.trainer_config_process({});
  EXPECT_TRUE(ds.mismatches().empty()) << ds.mismatches().front();
}

TEST(DeepSpeedConfig, MissingHiddenSizeIsTransformersError) {
  DeepSpeedConfig ds = processed("ds_config_zero3.json");
  expect_error([&] { ds.trainer_config_finalize(std::nullopt, 10, 0); },
               {"neither `hidden_size` nor `hidden_sizes`",
                "['zero_optimization.reduce_bucket_size', "
                "'zero_optimization.stage3_prefetch_bucket_size', "
                "'zero_optimization.stage3_param_persistence_threshold']"});
}

TEST(DeepSpeedConfig, HiddenSizeFromModelConfig) {
  EXPECT_EQ(hidden_size_from_model_config(json{{"hidden_size", 768}}), 768);
  EXPECT_EQ(hidden_size_from_model_config(json{{"hidden_sizes", {64, 512, 256}}}), 512);
  EXPECT_EQ(hidden_size_from_model_config(json{{"text_config", {{"hidden_size", 32}}}}), 32);
  EXPECT_FALSE(hidden_size_from_model_config(json{{"vocab_size", 10}}));
}

TEST(DeepSpeedConfig, UnknownKeyIsNamed) {
  expect_error([] { from_text(R"({"zero_optimization": {"stage": 2, "overlap_com": true}})"); },
               {"inline.json", "zero_optimization.overlap_com", "known keys of zero_optimization",
                "overlap_comm"});
  expect_error([] { from_text(R"({"zero_optimisation": {"stage": 2}})"); },
               {"zero_optimisation is not a DeepSpeed config key"});
}

TEST(DeepSpeedConfig, UnimplementedValuesAreNamed) {
  expect_error(
      [] {
        from_text(R"({"zero_optimization": {"stage": 3,
                      "offload_param": {"device": "nvme", "nvme_path": "/nvme"}}})");
      },
      {"zero_optimization.offload_param.device", "nvme", "\"cpu\" or \"none\""});
  expect_error([] { from_text(R"({"zero_optimization": {"stage": 4}})"); },
               {"zero_optimization.stage", "=4 does not exist"});
  expect_error(
      [] { from_text(R"({"optimizer": {"type": "Lamb"}, "zero_optimization": {"stage": 1}})"); },
      {"optimizer.type", "\"Lamb\"", "does not implement", "Adam, AdamW, SGD"});
  expect_error(
      [] { from_text(R"({"optimizer": {"type": "OneBitAdam"}, "zero_optimization": {}})"); },
      {"optimizer.type", "OneBitAdam"});
  expect_error([] { from_text(R"({"fp16": {"auto_cast": true}, "zero_optimization": {}})"); },
               {"fp16.auto_cast", "not supported"});
  expect_error([] { from_text(R"({"prescale_gradients": true, "zero_optimization": {}})"); },
               {"prescale_gradients", "not supported"});
  expect_error(
      [] { from_text(R"({"scheduler": {"type": "LRRangeTest"}, "zero_optimization": {}})"); },
      {"scheduler.type", "LRRangeTest"});
}

TEST(DeepSpeedConfig, AutoOnlyWhereTransformersFillsIt) {
  expect_error([] { from_text(R"({"steps_per_print": "auto", "zero_optimization": {}})"); },
               {"steps_per_print is \"auto\""});
  // Stage-3 keys stay "auto" below stage 3 (transformers fills them at stage 3 only).
  DeepSpeedConfig ds = from_text(
      R"({"zero_optimization": {"stage": 2, "stage3_param_persistence_threshold": "auto"}})");
  ds.trainer_config_process({});
  expect_error([&] { ds.trainer_config_finalize(64, 10, 0); },
               {"stage3_param_persistence_threshold", "stage 3"});
}

TEST(DeepSpeedConfig, ZeroSectionIsRequiredAsAccelerateRequiresIt) {
  expect_error([] { from_text(R"({"train_batch_size": 8})"); },
               {"zero_optimization is missing", "\"stage\": 0"});
}

TEST(DeepSpeedConfig, MalformedJsonGivesFileLineColumn) {
  // malformed.json misses a comma at the end of line 4: the parser stops at line 5's '"'.
  expect_error([] { DeepSpeedConfig::from_file(kData / "malformed.json"); },
               {"--deepspeed", "malformed.json:5:9: invalid JSON"});
  expect_error([] { DeepSpeedConfig::from_file(kData / "no_such.json"); },
               {"--deepspeed", "no_such.json", "no such file"});
  // A number too large for a double is not a parse_error to nlohmann (out_of_range.406, found
  // by fuzz/deepspeed_config_fuzzer.cpp): an ArgumentError all the same.
  expect_error([] { parse_json_config("{\"a\": 9e999}", "ds.json", "deepspeed"); },
               {"--deepspeed ds.json: invalid JSON", "number overflow"});
}

TEST(JsonConfig, TextPosition) {
  const std::string text = "{\n  \"a\": 1,\n  x\n}";
  EXPECT_EQ(text_position(text, 1).line, 1);
  EXPECT_EQ(text_position(text, 1).column, 1);
  const TextPosition x = text_position(text, text.find('x') + 1);
  EXPECT_EQ(x.line, 3);
  EXPECT_EQ(x.column, 3);
  EXPECT_EQ(text_position(text, 1000).line, 4);  // clamped to the end
}

TEST(PythonFormatting, AsTransformersPrintsMismatches) {
  EXPECT_EQ(python_str(json(5e-5)), "5e-05");
  EXPECT_EQ(python_str(json(0.0001)), "0.0001");
  EXPECT_EQ(python_str(json(1.0)), "1.0");
  EXPECT_EQ(python_str(json(2e8)), "200000000.0");
  EXPECT_EQ(python_str(json(1e15)), "1000000000000000.0");
  EXPECT_EQ(python_str(json(1e16)), "1e+16");
  EXPECT_EQ(python_str(json(-1.5e-7)), "-1.5e-07");
  EXPECT_EQ(python_str(json(true)), "True");
  EXPECT_EQ(python_str(json(nullptr)), "None");
  EXPECT_EQ(python_str(json::array({0.9, 0.999})), "[0.9, 0.999]");
  EXPECT_EQ(python_str(json::array({"a", 1})), "['a', 1]");
  EXPECT_EQ(python_str(json("auto")), "auto");
  EXPECT_TRUE(python_equal(json(1), json(1.0)));
  EXPECT_TRUE(python_equal(json(true), json(1)));
  EXPECT_FALSE(python_equal(json("8"), json(8)));
  EXPECT_FALSE(python_equal(json::array({0.9, 0.99}), json::array({0.9, 0.999})));
}

}  // namespace deepspeed_config_test
}  // namespace ctrainer
