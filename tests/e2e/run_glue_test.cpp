// run_glue end to end on 200-row slices of every bundled GLUE task (and a synthetic MNLI with
// matched/mismatched splits): train + eval + predict write HF's files with the task's metrics,
// the saved model reloads with identical evaluation results, and bad input fails cleanly.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/glue_files.h"
#include "support/process.h"

namespace {

namespace fs = std::filesystem;

using Result = ctrainer::testing::CommandResult;

Result run(const std::string& args) {
  return ctrainer::testing::run_shell(std::string(CTRAINER_RUN_GLUE_BINARY) + " " + args);
}

using ctrainer::testing::read_json;
using ctrainer::testing::read_lines;
using ctrainer::testing::write_slice;

struct TaskCase {
  std::string task;
  std::string folder;
  std::vector<std::string> metrics;  // eval_ keys besides loss / runtime
  std::set<std::string> labels;      // values allowed in the predictions (empty: a score)
};

std::ostream& operator<<(std::ostream& os, const TaskCase& c) {
  return os << c.task;
}

class RunGlueTest : public ::testing::TestWithParam<TaskCase> {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("ctrainer_run_glue_" + std::to_string(::getpid()) + "_" + GetParam().task);
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    // A very small BERT: the test checks the pipeline and files, not accuracy.
    std::ofstream(dir_ / "config.json") << R"({"model_type": "bert", "vocab_size": 30522,
      "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
      "intermediate_size": 64, "max_position_embeddings": 128})";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string common(const fs::path& out) const {
    return "--task_name " + GetParam().task + " --data_dir " + (dir_ / "data").string() +
           " --output_dir " + out.string() + " --cache_dir " + (dir_ / "cache").string() +
           " --max_seq_length 64 --per_device_train_batch_size 32 --per_device_eval_batch_size 64" +
           " --num_train_epochs 1 --learning_rate 1e-3 --report_to none --disable_tqdm";
  }
  std::string from_scratch() const {
    return " --config_name " + (dir_ / "config.json").string() + " --tokenizer_name " +
           std::string(CTRAINER_EXAMPLES_DATA_DIR) + "/vocab/bert-base-uncased-vocab.txt";
  }
  fs::path dir_;
};

TEST_P(RunGlueTest, TrainEvalPredictWriteHfOutputsAndTheModelReloads) {
  const TaskCase& c = GetParam();
  const fs::path source = fs::path(CTRAINER_EXAMPLES_DATA_DIR) / "glue" / c.folder;
  const bool headerless = c.task == "cola";  // CoLA's train/dev have no header line
  const int train_rows =
      write_slice(source / "train.tsv", dir_ / "data" / "train.tsv", 200, !headerless);
  const int dev_rows = write_slice(source / "dev.tsv", dir_ / "data" / "dev.tsv", 200, !headerless);
  const int test_rows = write_slice(source / "test.tsv", dir_ / "data" / "test.tsv", 200, true);
  ASSERT_EQ(train_rows, 200);

  const fs::path out = dir_ / "out";
  Result r = run(common(out) + from_scratch() + " --do_train --do_eval --do_predict");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  for (const char* file :
       {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json",
        "train_results.json", "eval_results.json", "all_results.json", "trainer_state.json"})
    EXPECT_TRUE(fs::exists(out / file)) << file;

  const auto train = read_json(out / "train_results.json");
  EXPECT_EQ(train.at("train_samples"), 200);
  EXPECT_TRUE(train.contains("train_loss"));
  const auto eval = read_json(out / "eval_results.json");
  EXPECT_EQ(eval.at("eval_samples"), dev_rows);
  for (const auto& metric : c.metrics) EXPECT_TRUE(eval.contains("eval_" + metric)) << metric;
  EXPECT_EQ(eval.contains("eval_combined_score"), c.metrics.size() > 1);
  const auto all = read_json(out / "all_results.json");
  EXPECT_EQ(all.at("train_samples"), 200);
  EXPECT_EQ(all.at("eval_samples"), dev_rows);

  const auto config = read_json(out / "config.json");
  EXPECT_EQ(config.at("finetuning_task"), c.task);
  EXPECT_EQ(config.at("architectures"), nlohmann::json::array({"BertForSequenceClassification"}));

  const auto predictions = read_lines(out / ("predict_results_" + c.task + ".txt"));
  ASSERT_EQ(predictions.size(), static_cast<size_t>(test_rows) + 1);
  EXPECT_EQ(predictions[0], "index\tprediction");
  const std::regex score(R"(\d+\t-?\d+\.\d{3})");
  for (size_t i = 1; i < predictions.size(); ++i) {
    const std::string& line = predictions[i];
    const auto tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    EXPECT_EQ(line.substr(0, tab), std::to_string(i - 1));
    if (c.labels.empty())
      EXPECT_TRUE(std::regex_match(line, score)) << line;
    else
      EXPECT_TRUE(c.labels.count(line.substr(tab + 1))) << line;
  }

  // The output folder is a model folder: evaluating it again gives the same numbers.
  const fs::path again = dir_ / "again";
  r = run(common(again) + " --model_name_or_path " + out.string() + " --do_eval");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(tokenized cache)"), std::string::npos)
      << "the dev split should come from the tokenization cache:\n"
      << r.output;
  const auto reloaded = read_json(again / "eval_results.json");
  for (const auto& metric : c.metrics)
    EXPECT_EQ(reloaded.at("eval_" + metric), eval.at("eval_" + metric)) << metric;
  EXPECT_EQ(reloaded.at("eval_loss"), eval.at("eval_loss"));
}

const std::set<std::string> kBinary{"0", "1"};
const std::set<std::string> kEntailment{"entailment", "not_entailment"};

INSTANTIATE_TEST_SUITE_P(
    BundledTasks, RunGlueTest,
    ::testing::Values(TaskCase{"cola", "CoLA", {"matthews_correlation"}, kBinary},
                      TaskCase{"sst2", "SST-2", {"accuracy"}, kBinary},
                      TaskCase{"mrpc", "MRPC", {"accuracy", "f1"}, kBinary},
                      TaskCase{"stsb", "STS-B", {"pearson", "spearmanr"}, {}},
                      TaskCase{"rte", "RTE", {"accuracy"}, kEntailment},
                      TaskCase{"wnli", "WNLI", {"accuracy"}, kBinary}),
    [](const auto& info) { return info.param.task; });

class RunGlueInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("ctrainer_run_glue_input_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    std::ofstream(dir_ / "config.json") << R"({"model_type": "bert", "vocab_size": 30522,
      "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "intermediate_size": 32, "max_position_embeddings": 64})";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string base(const std::string& task) const {
    return "--task_name " + task + " --data_dir " + (dir_ / "data").string() + " --output_dir " +
           (dir_ / "out").string() + " --cache_dir " + (dir_ / "cache").string() +
           " --config_name " + (dir_ / "config.json").string() + " --tokenizer_name " +
           std::string(CTRAINER_EXAMPLES_DATA_DIR) +
           "/vocab/bert-base-uncased-vocab.txt --report_to none --disable_tqdm"
           " --max_seq_length 32 --num_train_epochs 1 --per_device_train_batch_size 16";
  }
  fs::path dir_;
};

TEST_F(RunGlueInputTest, MnliEvaluatesAndPredictsMatchedAndMismatched) {
  // MNLI is not bundled: a synthetic one in its layout (columns are found by header name).
  const char* labels[] = {"entailment", "neutral", "contradiction"};
  for (const std::string split : {"train", "dev_matched", "dev_mismatched"}) {
    std::ofstream out(dir_ / "data" / (split + ".tsv"));
    out << "index\tgenre\tsentence1\tsentence2\tgold_label\n";
    for (int i = 0; i < 48; ++i)
      out << i << "\tfiction\tthe cat number " << i << " sat.\tit sat " << i % 3 << " times.\t"
          << labels[i % 3] << '\n';
  }
  for (const std::string split : {"test_matched", "test_mismatched"}) {
    std::ofstream out(dir_ / "data" / (split + ".tsv"));
    out << "index\tgenre\tsentence1\tsentence2\n";
    for (int i = 0; i < 10; ++i) out << i << "\tslate\ta dog " << i << ".\ta cat.\n";
  }
  Result r = run(base("mnli") + " --do_train --do_eval --do_predict");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto eval = read_json(dir_ / "out" / "eval_results.json");
  EXPECT_TRUE(eval.contains("eval_accuracy"));
  EXPECT_TRUE(eval.contains("eval_accuracy_mm"));
  EXPECT_EQ(eval.at("eval_samples_mm"), 48);
  for (const char* file : {"predict_results_mnli.txt", "predict_results_mnli-mm.txt"}) {
    const auto lines = read_lines(dir_ / "out" / file);
    ASSERT_EQ(lines.size(), 11u) << file;
    const std::string label = lines[1].substr(lines[1].find('\t') + 1);
    EXPECT_TRUE(label == "entailment" || label == "neutral" || label == "contradiction") << label;
  }
  const auto config = read_json(dir_ / "out" / "config.json");
  EXPECT_EQ(config.at("id2label").at("2"), "contradiction");
}

TEST_F(RunGlueInputTest, TwoProcessesTrainTheOneProcessModel) {
  // MRPC slices: 96 training pairs (2 ranks x 8 = one process x 16 per step) and 41 dev pairs
  // (an odd count: the ranks' shares differ by one). Dropout off, so both runs compute the
  // same function; only the order of float sums differs.
  const fs::path source = fs::path(CTRAINER_EXAMPLES_DATA_DIR) / "glue" / "MRPC";
  write_slice(source / "train.tsv", dir_ / "data" / "train.tsv", 96, true);
  write_slice(source / "dev.tsv", dir_ / "data" / "dev.tsv", 41, true);
  write_slice(source / "test.tsv", dir_ / "data" / "test.tsv", 23, true);
  std::ofstream(dir_ / "config.json") << R"({"model_type": "bert", "vocab_size": 30522,
      "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "intermediate_size": 32, "max_position_embeddings": 64, "hidden_dropout_prob": 0.0,
      "attention_probs_dropout_prob": 0.0})";
  const std::string flags =
      " --do_train --do_eval --do_predict --learning_rate 1e-3"
      " --per_device_eval_batch_size 8 --logging_steps 2";
  const fs::path one = dir_ / "out";  // base() writes there
  Result single = run(base("mrpc") + flags);
  ASSERT_EQ(single.exit_code, 0) << single.output;
  // The same command with another output folder and half the per-device batch.
  const fs::path two = dir_ / "ddp";
  std::string per_rank = base("mrpc");
  per_rank.replace(per_rank.find(one.string()), one.string().size(), two.string());
  const std::string batch = "--per_device_train_batch_size 16";
  per_rank.replace(per_rank.find(batch), batch.size(), "--per_device_train_batch_size 8");
  Result ddp = ctrainer::testing::run_shell(std::string(CTRAINER_RUN_BINARY) +
                                            " --standalone --nproc-per-node 2 " +
                                            CTRAINER_RUN_GLUE_BINARY + " " + per_rank + flags);
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;

  const auto eval_one = read_json(one / "eval_results.json");
  const auto eval_two = read_json(two / "eval_results.json");
  EXPECT_EQ(eval_two.at("eval_samples"), 41);
  for (const char* metric : {"eval_accuracy", "eval_f1", "eval_combined_score"})
    EXPECT_EQ(eval_two.at(metric), eval_one.at(metric)) << metric;
  EXPECT_NEAR(eval_two.at("eval_loss").get<double>(), eval_one.at("eval_loss").get<double>(), 1e-5);
  // The main process alone wrote the predictions: 23 rows in test order, as one process did.
  EXPECT_EQ(read_lines(two / "predict_results_mrpc.txt"),
            read_lines(one / "predict_results_mrpc.txt"));
  // The logged loss is averaged over the ranks: the one-process loss of the same global batch.
  const auto log_one = read_json(one / "trainer_state.json").at("log_history");
  const auto log_two = read_json(two / "trainer_state.json").at("log_history");
  ASSERT_EQ(log_one.size(), log_two.size());
  int losses = 0;
  for (size_t i = 0; i < log_one.size(); ++i)
    if (log_one[i].contains("loss")) {
      ++losses;
      EXPECT_NEAR(log_two[i].at("loss").get<double>(), log_one[i].at("loss").get<double>(), 1e-5);
    }
  EXPECT_GE(losses, 2);
}

// --full_last_layer (equal FLOPs for vs_hf) computes every row of the last layer: the run says
// so and trains the model the [CLS]-only default trains (dropout off; float rounding only).
TEST_F(RunGlueInputTest, FullLastLayerTrainsTheDefaultsModelAndSaysSo) {
  const fs::path source = fs::path(CTRAINER_EXAMPLES_DATA_DIR) / "glue" / "MRPC";
  write_slice(source / "train.tsv", dir_ / "data" / "train.tsv", 64, true);
  write_slice(source / "dev.tsv", dir_ / "data" / "dev.tsv", 24, true);
  std::ofstream(dir_ / "config.json") << R"({"model_type": "bert", "vocab_size": 30522,
      "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
      "intermediate_size": 32, "max_position_embeddings": 64, "hidden_dropout_prob": 0.0,
      "attention_probs_dropout_prob": 0.0})";
  const std::string flags = " --do_train --do_eval --learning_rate 1e-3 --logging_steps 1";
  Result cls_only = run(base("mrpc") + flags);
  ASSERT_EQ(cls_only.exit_code, 0) << cls_only.output;
  EXPECT_EQ(cls_only.output.find("--full_last_layer"), std::string::npos) << cls_only.output;
  const auto eval_cls_only = read_json(dir_ / "out" / "eval_results.json");
  const auto log_cls_only = read_json(dir_ / "out" / "trainer_state.json").at("log_history");
  fs::remove_all(dir_ / "out");
  Result full = run(base("mrpc") + flags + " --full_last_layer");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  EXPECT_NE(full.output.find("--full_last_layer: the last encoder layer computes every position"),
            std::string::npos)
      << full.output;
  EXPECT_NEAR(read_json(dir_ / "out" / "eval_results.json").at("eval_loss").get<double>(),
              eval_cls_only.at("eval_loss").get<double>(), 1e-5);
  const auto log_full = read_json(dir_ / "out" / "trainer_state.json").at("log_history");
  ASSERT_EQ(log_full.size(), log_cls_only.size());
  int losses = 0;
  for (size_t i = 0; i < log_full.size(); ++i)
    if (log_full[i].contains("loss")) {
      ++losses;
      EXPECT_NEAR(log_full[i].at("loss").get<double>(), log_cls_only[i].at("loss").get<double>(),
                  1e-5);
    }
  EXPECT_GE(losses, 4);
}

TEST_F(RunGlueInputTest, ATokenizerJsonTrainsWhatItsVocabularyTrainsAndKeysTheCache) {
  const fs::path source = fs::path(CTRAINER_EXAMPLES_DATA_DIR) / "glue" / "MRPC";
  write_slice(source / "train.tsv", dir_ / "data" / "train.tsv", 64, true);
  write_slice(source / "dev.tsv", dir_ / "data" / "dev.tsv", 24, true);
  // bert-base-uncased as transformers' BertConverter writes it into a tokenizer.json.
  nlohmann::json vocab = nlohmann::json::object();
  {
    std::ifstream in(std::string(CTRAINER_EXAMPLES_DATA_DIR) +
                     "/vocab/bert-base-uncased-vocab.txt");
    std::string token;
    for (int64_t id = 0; std::getline(in, token); ++id) vocab[token] = id;
  }
  nlohmann::json added = nlohmann::json::array();
  for (const char* t : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
    added.push_back(
        {{"id", vocab.at(t)}, {"content", t}, {"special", true}, {"normalized", false}});
  nlohmann::json tokenizer = {
      {"added_tokens", added},
      {"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", vocab}}},
      {"post_processor",
       {{"type", "BertProcessing"}, {"sep", {"[SEP]", 102}}, {"cls", {"[CLS]", 101}}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}}}};
  fs::create_directories(dir_ / "tok");
  std::ofstream(dir_ / "tok" / "tokenizer.json") << tokenizer.dump();
  std::ofstream(dir_ / "tok" / "tokenizer_config.json")
      << R"({"tokenizer_class": "BertTokenizer", "pad_token": "[PAD]", "unk_token": "[UNK]",
            "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"})";

  const std::string flags = " --do_train --do_eval --learning_rate 1e-3 --logging_steps 1 --seed 7";
  Result with_vocab = run(base("mrpc") + flags);
  ASSERT_EQ(with_vocab.exit_code, 0) << with_vocab.output;
  const auto log_vocab = read_json(dir_ / "out" / "trainer_state.json").at("log_history");
  fs::remove_all(dir_ / "out");
  std::string with_json_flags = base("mrpc");  // the same flags, the folder as tokenizer
  const size_t at = with_json_flags.find("--tokenizer_name ");
  with_json_flags.replace(at, with_json_flags.find(" --report_to") - at,
                          "--tokenizer_name " + (dir_ / "tok").string());
  with_json_flags += flags;
  Result with_json = run(with_json_flags);
  ASSERT_EQ(with_json.exit_code, 0) << with_json.output;
  // Another tokenizer, so the tokenized cache of the first run is not reused.
  EXPECT_EQ(with_json.output.find("from the cache"), std::string::npos) << with_json.output;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "out" / "tokenizer.json"));
  const auto log_json = read_json(dir_ / "out" / "trainer_state.json").at("log_history");
  ASSERT_EQ(log_json.size(), log_vocab.size());
  int losses = 0;
  for (size_t i = 0; i < log_json.size(); ++i)
    if (log_json[i].contains("loss")) {
      ++losses;
      EXPECT_EQ(log_json[i].at("loss").get<double>(), log_vocab[i].at("loss").get<double>()) << i;
    }
  EXPECT_GE(losses, 4);

  // The same run again reuses its cache; a changed tokenizer.json (cased now) does not.
  fs::remove_all(dir_ / "out");
  Result again = run(with_json_flags);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("from the cache"), std::string::npos) << again.output;
  tokenizer["normalizer"]["lowercase"] = false;
  std::ofstream(dir_ / "tok" / "tokenizer.json") << tokenizer.dump();
  fs::remove_all(dir_ / "out");
  Result cased = run(with_json_flags);
  ASSERT_EQ(cased.exit_code, 0) << cased.output;
  EXPECT_EQ(cased.output.find("from the cache"), std::string::npos) << cased.output;
}

TEST_F(RunGlueInputTest, ExplicitFilesReplaceDataDir) {
  // Any file names, read in the task's layout; the test file has no labels.
  {
    std::ofstream train(dir_ / "my_train.tsv"), dev(dir_ / "my_dev.tsv");
    train << "sentence\tlabel\n";
    dev << "sentence\tlabel\n";
    for (int i = 0; i < 40; ++i)
      train << (i % 2 ? "a fine film " : "a dull film ") << i << '\t' << i % 2 << '\n';
    for (int i = 0; i < 12; ++i) dev << (i % 2 ? "fine " : "dull ") << i << '\t' << i % 2 << '\n';
    std::ofstream test(dir_ / "my_test.tsv");
    test << "index\tsentence\n";
    for (int i = 0; i < 5; ++i) test << i << "\tquite fine\n";
  }
  const std::string files = " --train_file " + (dir_ / "my_train.tsv").string() +
                            " --validation_file " + (dir_ / "my_dev.tsv").string() +
                            " --test_file " + (dir_ / "my_test.tsv").string();
  Result r = run(base("sst2") + files + " --do_train --do_eval --do_predict");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_json(dir_ / "out" / "train_results.json").at("train_samples"), 40);
  EXPECT_EQ(read_json(dir_ / "out" / "eval_results.json").at("eval_samples"), 12);
  EXPECT_EQ(read_lines(dir_ / "out" / "predict_results_sst2.txt").size(), 6u);
}

TEST_F(RunGlueInputTest, MalformedRowNamesFileAndLineAndWritesNothing) {
  std::ofstream(dir_ / "data" / "train.tsv") << "sentence\tlabel\ngood movie\t1\nbad movie\t7\n";
  Result r = run(base("sst2") + " --do_train");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("train.tsv:3"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "model.safetensors"));
}

TEST_F(RunGlueInputTest, UnknownTaskListsTheTasks) {
  Result r = run(base("sst-2") + " --do_train");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("sst2"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(RunGlueInputTest, MissingModelSourceSaysWhatToPass) {
  Result r = run("--task_name rte --data_dir " + (dir_ / "data").string() + " --output_dir " +
                 (dir_ / "out").string() + " --do_train");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--model_name_or_path"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
