// Argument parsing through the real binary: defaults, overrides, JSON config, and each bad input
// -> exit code 2, a message naming the flag, and nothing written.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/process.h"

namespace {

namespace fs = std::filesystem;

using Result = ctrainer::testing::CommandResult;

Result run(const std::string& args) {
  return ctrainer::testing::run_shell(std::string(CTRAINER_EXAMPLE_BINARY) + " " + args);
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("ctrainer_cli_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    out_ = (dir_ / "out").string();
  }
  /// A tiny, fast run writing into out_.
  std::string quick(const std::string& extra = "") const {
    return "--output_dir " + out_ +
           " --do_train --max_steps 2 --num_train_examples 64 "
           "--num_eval_examples 16 --disable_tqdm " +
           extra;
  }
  nlohmann::json written_args() const {
    return nlohmann::json::parse(std::ifstream(fs::path(out_) / "training_args.json"));
  }
  void expect_rejected(const std::string& args, const std::string& message) {
    SCOPED_TRACE(args);
    Result r = run("--output_dir " + out_ + " --do_train " + args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out_)) << "nothing may be written for bad input";
  }
  fs::path dir_;
  std::string out_;
};

TEST_F(CliTest, DefaultsAreHuggingFacesAndAreWrittenToTrainingArgsJson) {
  Result r = run(quick());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto a = written_args();
  EXPECT_EQ(a["learning_rate"], 5e-5);
  EXPECT_EQ(a["per_device_train_batch_size"], 8);
  EXPECT_EQ(a["gradient_accumulation_steps"], 1);
  EXPECT_EQ(a["lr_scheduler_type"], "linear");
  EXPECT_EQ(a["adam_beta2"], 0.999);
  EXPECT_EQ(a["adam_epsilon"], 1e-8);
  EXPECT_EQ(a["max_grad_norm"], 1.0);
  EXPECT_EQ(a["num_train_epochs"], 3.0);
  EXPECT_EQ(a["seed"], 42);
  EXPECT_EQ(a["logging_steps"], 500);
  EXPECT_EQ(a["eval_strategy"], "no");
  EXPECT_EQ(a["log_level_replica"], "warning");
  EXPECT_EQ(a["max_steps"], 2);
  EXPECT_EQ(a["run_name"], out_);  // defaults to output_dir
  EXPECT_NE(r.output.find("***** train metrics *****"), std::string::npos);
  EXPECT_NE(r.output.find("train_loss"), std::string::npos);
}

TEST_F(CliTest, CommandLineFormsOverrideDefaults) {
  Result r =
      run(quick("--learning_rate=0.01 --per_device_train_batch_size 4 --fp16 false "
                "--logging_first_step --dataloader_drop_last true --evaluation_strategy steps "
                "--eval_steps 1 --do_eval --weight_decay 0.1 --report_to none"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto a = written_args();
  EXPECT_EQ(a["learning_rate"], 0.01);
  EXPECT_EQ(a["per_device_train_batch_size"], 4);
  EXPECT_EQ(a["fp16"], false);
  EXPECT_EQ(a["logging_first_step"], true);
  EXPECT_EQ(a["dataloader_drop_last"], true);
  EXPECT_EQ(a["eval_strategy"], "steps");
  EXPECT_EQ(a["weight_decay"], 0.1);
  // logging_first_step and eval_steps 1 really took effect: step 1 logged a loss and evaluated.
  std::ifstream log(fs::path(out_) / "trainer_log.jsonl");
  std::string first;
  std::getline(log, first);
  auto entry = nlohmann::json::parse(first);
  EXPECT_EQ(entry["step"], 1);
  EXPECT_TRUE(entry.contains("loss"));
  EXPECT_NE(r.output.find("eval_accuracy"), std::string::npos);
}

TEST_F(CliTest, JsonConfigWithCommandLineOverride) {
  const auto cfg = dir_ / "args.json";
  std::ofstream(cfg) << R"({"learning_rate": 0.002, "seed": 7, "warmup_ratio": 0.25,
                             "lr_scheduler_type": "cosine"})";
  Result r = run(quick("--config " + cfg.string() + " --seed 9"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto a = written_args();
  EXPECT_EQ(a["learning_rate"], 0.002);
  EXPECT_EQ(a["seed"], 9);  // the command line wins
  EXPECT_EQ(a["warmup_ratio"], 0.25);
  EXPECT_EQ(a["lr_scheduler_type"], "cosine");
}

TEST_F(CliTest, SingleJsonArgumentIsTheWholeConfiguration) {
  const auto cfg = dir_ / "all.json";
  nlohmann::json j = {{"output_dir", out_},       {"do_train", true},     {"max_steps", 2},
                      {"num_train_examples", 32}, {"disable_tqdm", true}, {"adam_beta1", 0.8}};
  std::ofstream(cfg) << j.dump();
  Result r = run(cfg.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(written_args()["adam_beta1"], 0.8);
}

TEST_F(CliTest, TrainingArgsJsonRoundTripsAsAConfig) {
  ASSERT_EQ(run(quick("--learning_rate 0.003 --seed 5")).exit_code, 0);
  const auto saved = dir_ / "saved.json";
  fs::copy_file(fs::path(out_) / "training_args.json", saved);
  const auto first = written_args();
  fs::remove_all(out_);
  Result r = run("--config " + saved.string() + " --num_train_examples 64 --num_eval_examples 16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(written_args(), first);
}

TEST_F(CliTest, BadInputsExitWithCode2AndNameTheFlag) {
  expect_rejected("--learning_rat 0.1", "--learning_rate");   // unknown, suggestion
  expect_rejected("--learning_rate abc", "--learning_rate");  // not a number
  expect_rejected("--per_device_train_batch_size -4", "--per_device_train_batch_size");
  expect_rejected("--fp16 --bf16", "--fp16");  // contradiction
  expect_rejected("--warmup_ratio 1.5", "--warmup_ratio");
  expect_rejected("--lr_scheduler_type triangle", "--lr_scheduler_type");
  expect_rejected("--eval_strategy steps --save_strategy epoch --load_best_model_at_end",
                  "--load_best_model_at_end");
  expect_rejected("--use_cpu --fp16", "use --bf16");  // float16 needs CUDA
  expect_rejected("--deepspeed ds.json", "--deepspeed ds.json: no such file");
  expect_rejected("--config " + (dir_ / "missing.json").string(), "missing.json");
  expect_rejected("--hidden_size 0", "--hidden_size");  // application flag
}

TEST_F(CliTest, MalformedJsonConfigNamesTheFileAndKey) {
  const auto cfg = dir_ / "bad.json";
  std::ofstream(cfg) << R"({"learning_rate": "fast"})";
  expect_rejected("--config " + cfg.string(), "learning_rate");
  std::ofstream(cfg) << R"({"learning_rate": 0.1,)";
  expect_rejected("--config " + cfg.string(), "bad.json");
}

TEST_F(CliTest, ExistingOutputDirIsNotOverwrittenWithoutTheFlag) {
  fs::create_directories(out_);
  std::ofstream(fs::path(out_) / "precious.txt") << "keep me";
  Result r = run(quick());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--overwrite_output_dir"), std::string::npos);
  EXPECT_FALSE(fs::exists(fs::path(out_) / "training_args.json"));
  EXPECT_EQ(run(quick("--overwrite_output_dir")).exit_code, 0);
  EXPECT_TRUE(fs::exists(fs::path(out_) / "precious.txt"));
}

TEST_F(CliTest, HelpListsEveryFlagWithDefaults) {
  Result r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--output_dir", "--learning_rate", "--gradient_accumulation_steps",
                           "--lr_scheduler_type", "--log_level_replica", "--ddp_bucket_cap_mb",
                           "--full_determinism", "--num_train_examples", "--hidden_size"})
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
  EXPECT_NE(r.output.find("5e-05"), std::string::npos);
}

}  // namespace
