// run_translation and run_summarization end to end on the bundled pairs with a tiny T5 started
// from a config (no pretrained model is bundled): training lowers the loss, evaluate and predict
// generate, and the result files are HF's (all_results.json, predict_results.json with
// predict_loss, the metric and gen_len, generated_predictions.txt with one line per example);
// bad input fails naming the flag or the file and line, writing nothing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/glue_files.h"
#include "support/process.h"

namespace {
namespace fs = std::filesystem;
using ctrainer::testing::read_json;
using ctrainer::testing::run_shell;

const std::string kData = std::string(CTRAINER_EXAMPLES_DATA_DIR) + "/seq2seq";

class RunSeq2Seq : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("ctrainer_run_seq2seq_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // A tiny T5 for the bundled tokenizer (7,600 ids; pad 0, eos 1, decoder start 0).
    std::ofstream(dir_ / "config.json") << nlohmann::json{
        {"model_type", "t5"}, {"vocab_size", 8000},  {"d_model", 32},
        {"d_kv", 8},          {"d_ff", 64},          {"num_layers", 2},
        {"num_heads", 4},     {"dropout_rate", 0.0}, {"decoder_start_token_id", 0},
        {"pad_token_id", 0},  {"eos_token_id", 1}};
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string common(const fs::path& out) const {
    return " --config_name " + (dir_ / "config.json").string() + " --tokenizer_name " + kData +
           "/t5-unigram-8k --output_dir " + out.string() +
           " --per_device_train_batch_size 8 --per_device_eval_batch_size 8 --learning_rate 1e-2"
           " --logging_steps 1 --report_to none --disable_tqdm true --save_strategy no"
           " --max_source_length 64 --max_target_length 32 --generation_max_length 12 ";
  }
  fs::path dir_;
};

std::vector<double> step_losses(const fs::path& output_dir) {
  std::vector<double> losses;
  const nlohmann::json state = read_json(output_dir / "trainer_state.json");
  for (const auto& entry : state["log_history"])
    if (entry.contains("loss")) losses.push_back(entry["loss"].get<double>());
  return losses;
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(RunSeq2Seq, TranslationTrainsEvaluatesAndPredictsWithBleu) {
  const fs::path out = dir_ / "translation";
  const auto run =
      run_shell(std::string(CTRAINER_RUN_TRANSLATION_BINARY) + common(out) + "--train_file " +
                kData + "/translation_en_de/train.json --validation_file " + kData +
                "/translation_en_de/validation.json --test_file " + kData +
                "/translation_en_de/test.json --source_lang en --target_lang de --source_prefix "
                "'translate English to German: ' --max_train_samples 256 --max_eval_samples 16"
                " --max_predict_samples 12 --max_steps 40 --do_train --do_eval --do_predict"
                " --predict_with_generate --num_beams 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::vector<double> losses = step_losses(out);
  ASSERT_EQ(losses.size(), 40u);
  // From about ln(7600) = 8.9; the last five steps' mean at least 1 below the first step.
  double last = 0;
  for (size_t i = losses.size() - 5; i < losses.size(); ++i) last += losses[i] / 5;
  EXPECT_LT(last, losses.front() - 1.0);
  const nlohmann::json predict = read_json(out / "predict_results.json");
  for (const char* key :
       {"predict_loss", "predict_bleu", "predict_gen_len", "predict_samples", "predict_runtime"})
    EXPECT_TRUE(predict.contains(key)) << key << " missing from " << predict.dump();
  EXPECT_EQ(predict["predict_samples"], 12);
  EXPECT_GE(predict["predict_bleu"].get<double>(), 0.0);
  EXPECT_GT(predict["predict_gen_len"].get<double>(), 0.0);
  EXPECT_LE(predict["predict_gen_len"].get<double>(), 12.0);
  const nlohmann::json all = read_json(out / "all_results.json");
  for (const char* key : {"train_loss", "eval_loss", "eval_bleu", "predict_bleu"})
    EXPECT_TRUE(all.contains(key)) << key;
  // One stripped generation per example, no trailing line break (HF joins them with "\n").
  const std::vector<std::string> generated = lines_of(out / "generated_predictions.txt");
  EXPECT_EQ(generated.size(), 12u);
  for (const std::string& line : generated) {
    EXPECT_FALSE(line.starts_with(" ") || line.ends_with(" ")) << "not stripped: '" << line << "'";
  }
  EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
  const nlohmann::json args = read_json(out / "training_args.json");
  EXPECT_EQ(args["predict_with_generate"], true);
  EXPECT_EQ(args["generation_num_beams"], 2);
  EXPECT_EQ(args["generation_max_length"], 12);
}

TEST_F(RunSeq2Seq, SummarizationReadsCsvColumnsAndReportsRouge) {
  const fs::path out = dir_ / "summarization";
  const auto run = run_shell(
      std::string(CTRAINER_RUN_SUMMARIZATION_BINARY) + common(out) + "--train_file " + kData +
      "/summarization/train.json --validation_file " + kData +
      "/summarization/validation.csv --text_column text --summary_column summary"
      " --source_prefix 'summarize: ' --max_train_samples 64 --max_eval_samples 8 --max_steps 6"
      " --do_train --do_eval --predict_with_generate");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json eval = read_json(out / "eval_results.json");
  for (const char* key :
       {"eval_loss", "eval_rouge1", "eval_rouge2", "eval_rougeL", "eval_rougeLsum", "eval_gen_len"})
    EXPECT_TRUE(eval.contains(key)) << key << " missing from " << eval.dump();
  EXPECT_GE(eval["eval_rouge1"].get<double>(), eval["eval_rouge2"].get<double>());
  EXPECT_EQ(eval["eval_samples"], 8);
}

TEST_F(RunSeq2Seq, BadInputFailsNamingItAndWritesNothing) {
  const fs::path out = dir_ / "bad";
  const std::string translation = std::string(CTRAINER_RUN_TRANSLATION_BINARY) + common(out) +
                                  "--do_train --train_file " + kData +
                                  "/translation_en_de/train.json ";
  auto run = run_shell(translation + "--source_lang en");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("--source_lang and --target_lang"), std::string::npos) << run.output;
  run = run_shell(translation + "--source_lang en --target_lang fr");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("no \"fr\" text"), std::string::npos) << run.output;
  run = run_shell(translation + "--source_lang en --target_lang de --dataset_name wmt16");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("--dataset_name wmt16"), std::string::npos) << run.output;
  std::ofstream(dir_ / "broken.csv") << "text,summary\n\"a text\",\"never closed\n";
  run = run_shell(std::string(CTRAINER_RUN_SUMMARIZATION_BINARY) + common(out) +
                  "--do_train --train_file " + (dir_ / "broken.csv").string());
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("broken.csv:2: a quoted field is never closed"), std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(out / "model.safetensors"));
}

}  // namespace
