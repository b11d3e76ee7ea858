// GLUE TSV readers: the bundled original files (row counts and labels from
// examples/data/glue/README.md), synthetic files in the QQP / MNLI / QNLI layouts, and the
// errors for malformed input (file:line and the problem).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <ctrainer/core/errors.h>
#include <ctrainer/examples/glue/glue_reader.h>
#include <ctrainer/examples/glue/tsv_file.h>

#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer::glue {
namespace glue_reader_test {

const std::string kGlueDir = std::string(CTRAINER_EXAMPLES_DATA_DIR) + "/glue";

std::string task_dir(const GlueTask& task) {
  return kGlueDir + "/" + task.folder;
}

std::map<int64_t, int64_t> label_counts(const GlueSplit& split) {
  std::map<int64_t, int64_t> counts;
  for (const auto& ex : split.examples) counts[*ex.label] += 1;
  return counts;
}

/// Writes `content` to a fresh file named `name` and returns its path.
std::string write_file(const std::string& name, const std::string& content) {
  static int counter = 0;  // each file in its own fresh folder
  const auto dir = testing::fresh_output_dir("glue" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(GlueTasks, TableFollowsHfDatasetsLabelOrder) {
  EXPECT_EQ(glue_tasks().size(), 9u);
  EXPECT_EQ(glue_task("mnli").label_names,
            (std::vector<std::string>{"entailment", "neutral", "contradiction"}));
  EXPECT_EQ(glue_task("qnli").label_values,
            (std::vector<std::string>{"entailment", "not_entailment"}));
  EXPECT_EQ(glue_task("wnli").label_names,
            (std::vector<std::string>{"not_entailment", "entailment"}));
  EXPECT_TRUE(glue_task("STSB").is_regression());
  EXPECT_EQ(glue_task("stsb").num_labels(), 1);
  EXPECT_EQ(glue_task("mnli").num_labels(), 3);
  EXPECT_EQ(glue_task("mnli").eval_splits,
            (std::vector<std::string>{"dev_matched", "dev_mismatched"}));
  EXPECT_FALSE(glue_task("mnli").split_has_labels("test_mismatched"));
  EXPECT_TRUE(glue_task("mnli").split_has_labels("dev_mismatched"));
  testing::expect_error([] { glue_task("squad"); }, {"unknown GLUE task 'squad'", "cola", "wnli"});
}

TEST(GlueReader, BundledFilesHaveThePublishedRowCounts) {
  const std::map<std::string, std::array<int64_t, 3>> expected = {
      {"mrpc", {3668, 408, 1725}}, {"sst2", {67349, 872, 1821}}, {"cola", {8551, 1043, 1063}},
      {"rte", {2490, 277, 3000}},  {"stsb", {5749, 1500, 1379}}, {"wnli", {635, 71, 146}}};
  for (const auto& [name, rows] : expected) {
    SCOPED_TRACE(name);
    const GlueTask& task = glue_task(name);
    const auto train = read_glue_split(task, task_dir(task), "train");
    const auto dev = read_glue_split(task, task_dir(task), "dev");
    const auto test = read_glue_split(task, task_dir(task), "test");
    EXPECT_EQ(train.size(), rows[0]);
    EXPECT_EQ(dev.size(), rows[1]);
    EXPECT_EQ(test.size(), rows[2]);
    EXPECT_TRUE(train.has_labels);
    EXPECT_FALSE(test.has_labels);
    for (const auto& ex : test.examples) EXPECT_FALSE(ex.label || ex.score);
    EXPECT_EQ(dev.examples.back().idx, rows[1] - 1);
    EXPECT_EQ(train.examples.front().text_b.has_value(), task.text_b_column.has_value());
  }
}

TEST(GlueReader, LabelsMapToHfIds) {
  // Label histograms from the README.
  auto sst2 = read_glue_split(glue_task("sst2"), kGlueDir + "/SST-2", "train");
  EXPECT_EQ(label_counts(sst2), (std::map<int64_t, int64_t>{{0, 29780}, {1, 37569}}));
  auto rte = read_glue_split(glue_task("rte"), kGlueDir + "/RTE", "dev");
  EXPECT_EQ(label_counts(rte), (std::map<int64_t, int64_t>{{0, 146}, {1, 131}}));  // entailment=0
  EXPECT_EQ(*rte.examples.front().label, 1);  // row 0 is not_entailment
  auto mrpc = read_glue_split(glue_task("mrpc"), kGlueDir + "/MRPC", "dev");
  EXPECT_EQ(label_counts(mrpc), (std::map<int64_t, int64_t>{{0, 129}, {1, 279}}));
  auto cola = read_glue_split(glue_task("cola"), kGlueDir + "/CoLA", "dev");
  EXPECT_EQ(label_counts(cola), (std::map<int64_t, int64_t>{{0, 322}, {1, 721}}));
  auto wnli = read_glue_split(glue_task("wnli"), kGlueDir + "/WNLI", "train");
  EXPECT_EQ(label_counts(wnli), (std::map<int64_t, int64_t>{{0, 323}, {1, 312}}));
}

TEST(GlueReader, FieldsComeFromTheRightColumns) {
  // MRPC: the BOM before "Quality" is dropped, so the header resolves; quotes are data.
  auto mrpc = read_glue_split(glue_task("mrpc"), kGlueDir + "/MRPC", "train");
  EXPECT_EQ(mrpc.examples[0].text_a.substr(0, 30), "Amrozi accused his brother, wh");
  EXPECT_EQ(*mrpc.examples[0].label, 1);
  EXPECT_EQ(mrpc.examples[0].line, 2);
  auto mrpc_dev = read_glue_split(glue_task("mrpc"), kGlueDir + "/MRPC", "dev");
  EXPECT_EQ(mrpc_dev.examples[0].text_b->substr(0, 5), "\"The ");
  // STS-B: float scores.
  auto stsb = read_glue_split(glue_task("stsb"), kGlueDir + "/STS-B", "train");
  EXPECT_EQ(stsb.examples[0].text_a, "A plane is taking off.");
  EXPECT_EQ(*stsb.examples[0].text_b, "An air plane is taking off.");
  EXPECT_FLOAT_EQ(*stsb.examples[0].score, 5.0f);
  EXPECT_FLOAT_EQ(*stsb.examples[1].score, 3.8f);
  EXPECT_FALSE(stsb.examples[0].label.has_value());
  // CoLA: no header, the sentence is the 4th column; its dev file lacks a final newline.
  auto cola = read_glue_split(glue_task("cola"), kGlueDir + "/CoLA", "train");
  EXPECT_EQ(cola.examples[0].text_a,
            "Our friends won't buy this analysis, let alone the next one we propose.");
  EXPECT_EQ(cola.examples[0].line, 1);
  auto cola_test = read_glue_split(glue_task("cola"), kGlueDir + "/CoLA", "test");
  EXPECT_EQ(cola_test.examples[0].text_a, "Bill whistled past the house.");
  // SST-2 keeps the trailing space of the sentence (the tokenizer drops it).
  auto sst2 = read_glue_split(glue_task("sst2"), kGlueDir + "/SST-2", "dev");
  EXPECT_EQ(sst2.examples[0].text_a, "it 's a charming and often affecting journey . ");
}

TEST(GlueReader, SyntheticQqpMnliQnliLayouts) {
  // Headers of the original GLUE files.
  auto qqp_train = write_file("train.tsv",
                              "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
                              "0\t1\t2\tHow \"are\" you?\tWho are you?\t0\n"
                              "1\t3\t4\tWhat is AI?\tWhat's AI?\t1\n");
  auto qqp = read_glue_tsv(glue_task("qqp"), qqp_train, "train");
  ASSERT_EQ(qqp.size(), 2);
  EXPECT_EQ(qqp.examples[0].text_a, "How \"are\" you?");
  EXPECT_EQ(*qqp.examples[1].text_b, "What's AI?");
  EXPECT_EQ(*qqp.examples[1].label, 1);
  auto qqp_test = read_glue_tsv(
      glue_task("qqp"), write_file("test.tsv", "id\tquestion1\tquestion2\n0\tA?\tB?\n"), "test");
  EXPECT_EQ(qqp_test.examples[0].text_b, "B?");
  EXPECT_FALSE(qqp_test.examples[0].label);

  const std::string mnli_prefix =
      "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
      "sentence1_parse\tsentence2_parse\tsentence1\tsentence2";
  auto mnli_train =
      write_file("train.tsv", mnli_prefix + "\tlabel1\tgold_label\n" +
                                  "0\t1\t1e\tgov\t( a )\t( b )\t(ROOT a)\t(ROOT "
                                  "b)\tPremise one.\tHypothesis one.\tneutral\tneutral\n");
  auto mnli = read_glue_tsv(glue_task("mnli"), mnli_train, "train");
  EXPECT_EQ(mnli.examples[0].text_a, "Premise one.");
  EXPECT_EQ(*mnli.examples[0].label, 1);  // neutral
  auto mnli_dev = write_file(
      "dev_matched.tsv", mnli_prefix + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n" +
                             "0\t1\t1c\tfiction\ta\tb\tc\td\tP.\tH.\tcontradiction\tneutral\t"
                             "contradiction\tcontradiction\tcontradiction\tcontradiction\n");
  EXPECT_EQ(*read_glue_tsv(glue_task("mnli"), mnli_dev, "dev_matched").examples[0].label, 2);
  auto mnli_test =
      write_file("test_mismatched.tsv", mnli_prefix + "\n0\t1\t1\tletters\ta\tb\tc\td\tP2.\tH2.\n");
  auto mnli_t = read_glue_tsv(glue_task("mnli"), mnli_test, "test_mismatched");
  EXPECT_EQ(*mnli_t.examples[0].text_b, "H2.");
  EXPECT_FALSE(mnli_t.has_labels);

  auto qnli =
      read_glue_tsv(glue_task("qnli"),
                    write_file("dev.tsv",
                               "index\tquestion\tsentence\tlabel\n"
                               "0\tWhat?\tThis.\tnot_entailment\n1\tWho?\tHim.\tentailment\n"),
                    "dev");
  EXPECT_EQ(*qnli.examples[0].label, 1);
  EXPECT_EQ(*qnli.examples[1].label, 0);
  EXPECT_EQ(qnli.examples[1].text_a, "Who?");
}

TEST(GlueReader, MalformedInputNamesFileLineAndProblem) {
  const GlueTask& rte = glue_task("rte");
  const std::string header = "index\tsentence1\tsentence2\tlabel\n";
  auto columns = write_file("dev.tsv", header + "0\ta\tb\tentailment\n1\ta\tb\n");
  testing::expect_error([&] { read_glue_tsv(rte, columns, "dev"); },
                        {columns + ":3:", "expected 4 tab-separated columns", "found 3"});
  auto label = write_file("dev.tsv", header + "0\ta\tb\tneutral\n");
  testing::expect_error(
      [&] { read_glue_tsv(rte, label, "dev"); },
      {label + ":2:", "'neutral' is not a label of GLUE task rte", "entailment, not_entailment"});
  auto score = write_file("train.tsv",
                          "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
                          "sentence2\tscore\n0\tg\tf\ty\to\ts\ts\ta\tb\tfive\n");
  testing::expect_error([&] { read_glue_tsv(glue_task("stsb"), score, "train"); },
                        {score + ":2:", "'five' is not a finite number"});
  auto empty = write_file("train.tsv", "");
  testing::expect_error([&] { read_glue_tsv(rte, empty, "train"); },
                        {empty + ":1:", "the file is empty"});
  auto wrong_header = write_file("train.tsv", "index\tpremise\thypothesis\tlabel\n0\ta\tb\t0\n");
  testing::expect_error([&] { read_glue_tsv(rte, wrong_header, "train"); },
                        {wrong_header + ":1:", "no column 'sentence1'"});
  auto blank = write_file("train.tsv", header + "\n0\ta\tb\tentailment\n");
  testing::expect_error([&] { read_glue_tsv(rte, blank, "train"); }, {blank + ":2:", "empty line"});
  // A labeled split whose header lacks the label column (e.g. a test file passed as dev).
  auto unlabeled = write_file("dev.tsv", "index\tsentence1\tsentence2\n0\ta\tb\n");
  testing::expect_error([&] { read_glue_tsv(rte, unlabeled, "dev"); }, {"no column 'label'"});
  testing::expect_error([&] { read_glue_split(rte, "/nonexistent", "dev"); },
                        {"/nonexistent/dev.tsv"});
}

TEST(TsvFile, SplitsOnTabsOnlyAndHandlesBomCrlfAndLastLine) {
  TsvFile file("mem.tsv",
               "\xEF\xBB\xBF"
               "a\t\"b\tc\"\r\nlast");
  ASSERT_EQ(file.lines().size(), 2u);
  EXPECT_EQ(split_tsv_line(file.lines()[0]), (std::vector<std::string_view>{"a", "\"b", "c\""}));
  EXPECT_EQ(file.lines()[1], "last");
  EXPECT_EQ(split_tsv_line("x\t"), (std::vector<std::string_view>{"x", ""}));
  EXPECT_EQ(file.where(7), "mem.tsv:7");
}

}  // namespace glue_reader_test
}  // namespace ctrainer::glue
