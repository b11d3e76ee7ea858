// run_glue as a SageMaker job starts it: no --output_dir or data flags, the hyperparameters in
// SM_HPS, the data in the train and eval channels. The model lands in SM_MODEL_DIR, the results
// also in SM_OUTPUT_DATA_DIR, the hyperparameters take effect, a command-line flag wins over its
// hyperparameter, and --plot draws the curves next to the model. A malformed SM_HPS stops the
// run before anything is written.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/glue_files.h"
#include "support/process.h"

namespace {

namespace fs = std::filesystem;
using ctrainer::testing::read_json;

class RunGlueSageMaker : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("ctrainer_run_glue_sagemaker_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    for (const char* folder : {"input/train", "input/eval", "model", "output"})
      fs::create_directories(dir_ / folder);
    std::ofstream train(dir_ / "input/train/sst2_part_0.tsv"), dev(dir_ / "input/eval/dev.tsv");
    train << "sentence\tlabel\n";
    dev << "sentence\tlabel\n";
    for (int i = 0; i < 48; ++i)
      train << (i % 2 ? "a fine film " : "a dull film ") << i << '\t' << i % 2 << '\n';
    for (int i = 0; i < 12; ++i) dev << (i % 2 ? "fine " : "dull ") << i << '\t' << i % 2 << '\n';
    std::ofstream(dir_ / "config.json") << R"({"model_type": "bert", "vocab_size": 30522,
      "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "intermediate_size": 32, "max_position_embeddings": 64})";
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// run_glue with SageMaker's variables (SM_HPS = `hyperparameters`) and `flags`.
  ctrainer::testing::CommandResult run(const std::string& hyperparameters,
                                       const std::string& flags) const {
    const std::string environment =
        "SM_MODEL_DIR=" + (dir_ / "model").string() +
        " SM_OUTPUT_DATA_DIR=" + (dir_ / "output").string() +
        " SM_CHANNEL_TRAIN=" + (dir_ / "input/train").string() +
        " SM_CHANNEL_EVAL=" + (dir_ / "input/eval").string() + " SM_HPS='" + hyperparameters +
        "' SM_HOSTS='[\"algo-1\"]' SM_CURRENT_HOST=algo-1 SM_NUM_GPUS=0 ";
    return ctrainer::testing::run_shell(
        environment + CTRAINER_RUN_GLUE_BINARY + " --task_name sst2 --cache_dir " +
        (dir_ / "cache").string() + " --config_name " + (dir_ / "config.json").string() +
        " --tokenizer_name " + CTRAINER_EXAMPLES_DATA_DIR +
        "/vocab/bert-base-uncased-vocab.txt --max_seq_length 32 --disable_tqdm " + flags);
  }

  fs::path dir_;
};

TEST_F(RunGlueSageMaker, ChannelsHyperparametersAndFoldersAsAJobGivesThem) {
  const std::string hyperparameters =
      R"({"do_train": "True", "do_eval": true, "learning_rate": 0.002, "num_train_epochs": 1,)"
      R"( "per_device_train_batch_size": 8, "logging_steps": 2, "eval_strategy": "steps",)"
      R"( "eval_steps": 3, "lr_scheduler_type": "constant", "report_to": ["none"], "seed": 11,)"
      R"( "sagemaker_program": "train.sh"})";
  const auto result = run(hyperparameters, "--per_device_train_batch_size 16 --plot");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const fs::path model = dir_ / "model";
  for (const char* file : {"model.safetensors", "config.json", "trainer_state.json",
                           "eval_results.json", "training_curves.svg"})
    EXPECT_TRUE(fs::exists(model / file)) << file;
  // The train channel's only file, the eval channel's dev.tsv.
  EXPECT_EQ(read_json(model / "train_results.json").at("train_samples"), 48);
  EXPECT_EQ(read_json(model / "eval_results.json").at("eval_samples"), 12);
  // The hyperparameters: a constant 0.002, evaluation every 3 steps; the command line's batch 16
  // over SM_HPS's 8: 48 / 16 = 3 steps.
  const auto state = read_json(model / "trainer_state.json");
  EXPECT_EQ(state.at("global_step"), 3);
  EXPECT_EQ(state.at("train_batch_size"), 16);
  int evaluations = 0;
  for (const auto& entry : state.at("log_history")) {
    if (entry.contains("learning_rate"))
      EXPECT_DOUBLE_EQ(entry.at("learning_rate").get<double>(), 0.002);
    if (entry.contains("eval_accuracy")) ++evaluations;
  }
  EXPECT_GE(evaluations, 1);
  // SM_OUTPUT_DATA_DIR has copies of the results.
  for (const char* file : {"eval_results.json", "train_results.json", "all_results.json",
                           "trainer_state.json"})
    EXPECT_TRUE(fs::exists(dir_ / "output" / file)) << file;
  std::ifstream svg(model / "training_curves.svg");
  const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  for (const char* panel : {"Training loss", "Learning rate", "Evaluation: accuracy"})
    EXPECT_NE(text.find(panel), std::string::npos) << panel;
}

TEST_F(RunGlueSageMaker, MalformedHyperparametersStopTheRunBeforeAnythingIsWritten) {
  const auto result = run(R"({"do_train": true, "learning_rate": })", "");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("SM_HPS="), std::string::npos) << result.output;
  EXPECT_TRUE(fs::is_empty(dir_ / "model"));
  const auto unknown = run(R"({"do_train": true, "epochs": 3})", "");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("SM_HPS key \"epochs\""), std::string::npos) << unknown.output;
  EXPECT_TRUE(fs::is_empty(dir_ / "model"));
}

}  // namespace
