// run_clm and run_mlm end to end on slices of the bundled corpus: a GPT-2 trained from scratch
// lowers its perplexity; a run_mlm resumed from a checkpoint logs, masks and saves what the
// uninterrupted run does, with any number of loader threads; bad input fails naming the flag.
// Their agreement with transformers: parity.run_clm_vs_hf, parity.run_mlm_vs_hf.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/glue_files.h"
#include "support/process.h"

namespace {
namespace fs = std::filesystem;
using ctrainer::testing::read_json;
using ctrainer::testing::run_shell;

const std::string kData = CTRAINER_EXAMPLES_DATA_DIR;

class RunLanguageModeling : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("ctrainer_run_lm_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ifstream corpus(kData + "/text/kjv.txt");
    std::ofstream slice(dir_ / "train.txt");
    std::string line;
    for (int i = 0; i < 1200 && std::getline(corpus, line); ++i) slice << line << '\n';
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string train_file() const { return (dir_ / "train.txt").string(); }

  /// Losses of every logged step of output_dir's trainer_state.json.
  static std::vector<double> step_losses(const fs::path& output_dir) {
    std::vector<double> losses;
    const nlohmann::json state = read_json(output_dir / "trainer_state.json");
    for (const auto& entry : state["log_history"])
      if (entry.contains("loss")) losses.push_back(entry["loss"].get<double>());
    return losses;
  }

  std::string mlm(const fs::path& out, const std::string& extra) const {
    return std::string(CTRAINER_RUN_MLM_BINARY) +
           " --model_type bert --config_overrides hidden_size=32,num_hidden_layers=2,"
           "num_attention_heads=2,intermediate_size=64,max_position_embeddings=64"
           " --tokenizer_name " +
           kData + "/vocab/bert-base-uncased-vocab.txt --train_file " + train_file() +
           " --max_seq_length 64 --output_dir " + out.string() +
           " --per_device_train_batch_size 8 --max_steps 8 --save_steps 4 --logging_steps 1"
           " --learning_rate 1e-3 --report_to none --disable_tqdm true --do_train " +
           extra;
  }
  fs::path dir_;
};

TEST_F(RunLanguageModeling, ClmFromScratchLowersThePerplexity) {
  const std::string common =
      std::string(CTRAINER_RUN_CLM_BINARY) +
      " --model_type gpt2 --config_overrides n_embd=64,n_layer=2,n_head=4,vocab_size=8192,"
      "n_positions=64 --tokenizer_name " +
      kData + "/text/kjv-bpe-8k --train_file " + train_file() +
      " --block_size 64 --max_eval_samples 32 --report_to none --disable_tqdm "
      "true --do_eval --per_device_eval_batch_size 16 ";
  const auto before = run_shell(common + "--output_dir " + (dir_ / "untrained").string());
  ASSERT_EQ(before.exit_code, 0) << before.output;
  const auto after = run_shell(common +
                               "--do_train --max_steps 60 --learning_rate 3e-3 "
                               "--per_device_train_batch_size 16 --output_dir " +
                               (dir_ / "trained").string());
  ASSERT_EQ(after.exit_code, 0) << after.output;
  const double untrained = read_json(dir_ / "untrained" / "eval_results.json")["perplexity"];
  const nlohmann::json trained = read_json(dir_ / "trained" / "eval_results.json");
  EXPECT_NEAR(trained["perplexity"].get<double>(), std::exp(trained["eval_loss"].get<double>()),
              1e-6 * untrained);
  // The same seed makes the same initial model: 60 steps must at least halve the perplexity.
  EXPECT_LT(trained["perplexity"].get<double>(), untrained / 2) << untrained;
  EXPECT_TRUE(fs::exists(dir_ / "trained" / "tokenizer.json"));
  EXPECT_TRUE(fs::exists(dir_ / "trained" / "model.safetensors"));
}

TEST_F(RunLanguageModeling, MlmResumesWithTheSameMasksWhateverTheThreads) {
  const auto whole = run_shell(mlm(dir_ / "whole", ""));
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  const std::vector<double> expected = step_losses(dir_ / "whole");
  ASSERT_EQ(expected.size(), 8u);

  // The second half again, from the first half's checkpoint, with two loader threads.
  fs::create_directories(dir_ / "resumed");
  fs::copy(dir_ / "whole" / "checkpoint-4", dir_ / "resumed" / "checkpoint-4",
           fs::copy_options::recursive);
  const auto resumed = run_shell(mlm(dir_ / "resumed", "--dataloader_num_workers 2"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming training at"), std::string::npos) << resumed.output;
  const std::vector<double> losses = step_losses(dir_ / "resumed");
  ASSERT_EQ(losses.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(losses[i], expected[i]) << "step " << i + 1;
  std::ifstream a(dir_ / "whole" / "model.safetensors", std::ios::binary);
  std::ifstream b(dir_ / "resumed" / "model.safetensors", std::ios::binary);
  EXPECT_TRUE(std::equal(std::istreambuf_iterator<char>(a), {}, std::istreambuf_iterator<char>(b)))
      << "the resumed run saved other weights";
}

TEST_F(RunLanguageModeling, BadInputNamesTheFlag) {
  const std::string clm = std::string(CTRAINER_RUN_CLM_BINARY) + " --output_dir " +
                          (dir_ / "bad").string() + " --do_train --tokenizer_name " + kData +
                          "/text/kjv-bpe-8k --model_type gpt2 ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {clm + "--dataset_name wikitext", "--dataset_name"},
      {clm + "--train_file " + (dir_ / "x.csv").string(), ".txt, .json or .jsonl"},
      {clm + "--train_file " + train_file() + " --config_overrides n_layers=2", "n_layers"},
      {clm + "--train_file " + train_file() + " --config_overrides vocab_size=100",
       "vocab_size=8192"},
      {clm + "--train_file " + train_file() + " --block_size 0", "--block_size"},
      {mlm(dir_ / "bad_mlm", "--whole_word_mask"), "--whole_word_mask"},
      {mlm(dir_ / "bad_mlm2", "--max_seq_length 1000"), "max_position_embeddings"},
  };
  for (const auto& [command, expected] : cases) {
    const auto result = run_shell(command);
    EXPECT_NE(result.exit_code, 0) << command;
    EXPECT_NE(result.output.find(expected), std::string::npos) << command << "\n" << result.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "bad" / "model.safetensors"));
}

}  // namespace
