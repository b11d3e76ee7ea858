// ctrainer-bench report and rerun end to end, on the fixture results in tests/data/bench_results
// (alpha: a full result with a note and a chart; beta: one reconstructed from a note): the
// generated sections hold the command, environment, table, headline metrics and links; text
// outside the generated markers survives; new results get a section and a reading placeholder;
// bad input fails with a message that names the file and the fix.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/process.h"

namespace {

namespace fs = std::filesystem;
using ctrainer::testing::run_shell;

const std::string kBench = CTRAINER_BENCH_BINARY;
const fs::path kFixtures = fs::path(CTRAINER_TEST_DATA_DIR) / "bench_results";

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A fresh folder with the fixtures copied in, removed at the end of the test.
class BenchReport : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("ctrainer_bench_report_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const auto& entry : fs::directory_iterator(kFixtures))
      fs::copy_file(entry.path(), dir_ / entry.path().filename());
  }
  void TearDown() override { fs::remove_all(dir_); }
  ctrainer::testing::CommandResult report() {
    return run_shell(kBench + " report --results '" + dir_.string() + "'");
  }
  fs::path dir_;
};

/// The text between `from` and the next `to` in `text` ("" when absent).
std::string between(const std::string& text, const std::string& from, const std::string& to) {
  const auto b = text.find(from);
  if (b == std::string::npos) return "";
  const auto e = text.find(to, b + from.size());
  return text.substr(b + from.size(),
                     e == std::string::npos ? std::string::npos : e - b - from.size());
}

const char* kHandWritten =
    "# Our benchmarks\n"
    "\n"
    "Hand-written introduction that must survive.\n"
    "\n"
    "## Readings\n"
    "\n"
    "- **alpha**: the lead's reading of alpha, with 0.99 in it.\n"
    "\n"
    "<!-- readings:end -->\n"
    "\n"
    "## alpha\n"
    "\n"
    "Prose above alpha's markers.\n"
    "\n"
    "<!-- generated:begin alpha -->\n"
    "STALE TABLE FROM AN OLDER RUN\n"
    "<!-- generated:end alpha -->\n"
    "\n"
    "Prose below alpha's markers, after the table.\n";

TEST_F(BenchReport, RegeneratesBetweenMarkersAndKeepsProse) {
  std::ofstream(dir_ / "README.md") << kHandWritten;
  const auto r = report();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 section(s) regenerated (alpha), 1 appended (beta)"), std::string::npos)
      << r.output;
  const std::string readme = read(dir_ / "README.md");
  for (const char* prose :
       {"# Our benchmarks\n\nHand-written introduction that must survive.\n",
        "- **alpha**: the lead's reading of alpha, with 0.99 in it.\n",
        "## alpha\n\nProse above alpha's markers.\n\n<!-- generated:begin alpha -->\n",
        "<!-- generated:end alpha -->\n\nProse below alpha's markers, after the table.\n"})
    EXPECT_NE(readme.find(prose), std::string::npos) << "lost: " << prose << "\n" << readme;
  EXPECT_EQ(readme.find("STALE"), std::string::npos) << readme;

  const std::string alpha =
      between(readme, "<!-- generated:begin alpha -->", "<!-- generated:end alpha -->");
  EXPECT_NE(alpha.find("Command: `build/benchmarks/ctrainer-bench alpha --rounds 3 --json "
                       "benchmarks/results/alpha.json`"),
            std::string::npos)
      << alpha;
  EXPECT_NE(alpha.find("date (UTC) 2026-01-02T03:04:05Z; CPU Test CPU @ 1.00GHz; nproc 2; "
                       "intra-op threads 2; torch 2.15.0; BLAS mkl."),
            std::string::npos)
      << alpha;
  EXPECT_NE(alpha.find("| configuration | step ms | samples/s |\n"
                       "|---|---|---|\n"
                       "| plain | 10.5 | 95.2 |\n"
                       "| a\\|b | 12.0 | 83.3 |\n"),
            std::string::npos)
      << alpha;
  // Top-level scalars but the spread, 4 significant digits (large values whole).
  EXPECT_NE(alpha.find("Headline metrics: `ratio` = 0.9877, `speed` = 123457."), std::string::npos)
      << alpha;
  EXPECT_EQ(alpha.find("ignored"), std::string::npos);
  EXPECT_EQ(alpha.find("ratio_max"), std::string::npos) << "the spread is not a headline";
  EXPECT_NE(alpha.find("[alpha.md](alpha.md)"), std::string::npos);
  EXPECT_NE(alpha.find("![alpha_chart](alpha_chart.svg)"), std::string::npos);
  EXPECT_EQ(alpha.find("alpha_missing_chart"), std::string::npos) << "links a missing chart";

  // beta: appended with a heading, its reading placeholder inserted before readings:end.
  const std::string beta =
      between(readme, "## beta\n\n<!-- generated:begin beta -->", "<!-- generated:end beta -->");
  EXPECT_NE(beta.find("| threads | MB/s |\n|---|---|\n| 1 | 24.01 |\n| 2 | 44.50 |\n"),
            std::string::npos)
      << readme;
  EXPECT_NE(beta.find("Environment: reconstructed from beta.md of the same run; date 2026-11-22; "
                      "machine: Debian 12, 2 vCPUs."),
            std::string::npos)
      << beta;
  EXPECT_EQ(beta.find("beta.md"), beta.find("beta.md of the same run")) << "no note to link";
  EXPECT_NE(readme.find("- **beta**: (reading to be written)\n<!-- readings:end -->"),
            std::string::npos)
      << readme;
  EXPECT_EQ(readme.find("**alpha**: (reading"), std::string::npos) << "alpha has a reading";

  // A second run changes nothing.
  const auto again = report();
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(read(dir_ / "README.md"), readme);
}

TEST_F(BenchReport, FreshReadmeHasPlaceholdersAndEverySection) {
  const auto r = report();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string readme = read(dir_ / "README.md");
  EXPECT_EQ(readme.rfind("# Benchmark results\n", 0), 0u) << readme;
  EXPECT_NE(readme.find("- **alpha**: (reading to be written)\n- **beta**: (reading to be "
                        "written)\n\n<!-- readings:end -->"),
            std::string::npos)
      << readme;
  EXPECT_LT(readme.find("<!-- generated:begin alpha -->"),
            readme.find("<!-- generated:begin beta -->"));
}

TEST_F(BenchReport, BadJsonNamesTheFile) {
  std::ofstream(dir_ / "broken.json") << "{\"scenario\": \"broken\", ";
  const auto r = report();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find((dir_ / "broken.json").string() + " is not valid JSON"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "README.md")) << "nothing written on error";

  fs::remove(dir_ / "broken.json");
  std::ofstream(dir_ / "other.json") << "{\"rows\": []}";
  const auto not_result = report();
  EXPECT_EQ(not_result.exit_code, 1);
  EXPECT_NE(not_result.output.find("other.json is not a ctrainer-bench result"), std::string::npos)
      << not_result.output;
}

TEST_F(BenchReport, BrokenMarkersNameTheReadme) {
  std::ofstream(dir_ / "README.md") << "intro\n<!-- generated:begin alpha -->\nno end marker\n";
  const auto r = report();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("README.md: the section alpha has a begin marker but no end marker"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read(dir_ / "README.md"), "intro\n<!-- generated:begin alpha -->\nno end marker\n");
}

TEST_F(BenchReport, MissingFolderAndUnwritableReadme) {
  const auto missing = run_shell(kBench + " report --results '" + (dir_ / "nope").string() + "'");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("results folder " + (dir_ / "nope").string() + " does not exist"),
            std::string::npos)
      << missing.output;
  // The temporary file cannot be created where a folder of that name is (root ignores modes).
  fs::create_directories(dir_ / "README.md.tmp");
  const auto unwritable = report();
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_NE(unwritable.output.find("cannot write " + (dir_ / "README.md.tmp").string()),
            std::string::npos)
      << unwritable.output;
}

TEST_F(BenchReport, RerunRewritesTheResultInPlace) {
  // A recorded command whose --json pointed elsewhere: rerun writes to the file it was given.
  nlohmann::json recorded = {
      {"scenario", "tokenizer"},
      {"command", "ctrainer-bench tokenizer --quick --rounds 1 --json '/elsewhere/x y.json'"}};
  std::ofstream(dir_ / "tokenizer.json") << recorded.dump();
  const auto r = run_shell(kBench + " rerun '" + (dir_ / "tokenizer.json").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto result = nlohmann::json::parse(read(dir_ / "tokenizer.json"));
  EXPECT_EQ(result["scenario"], "tokenizer");
  EXPECT_EQ(result["command"],
            kBench + " tokenizer --quick --rounds 1 --json " + (dir_ / "tokenizer.json").string());
  EXPECT_TRUE(result["table"]["rows"].is_array());
  EXPECT_TRUE(result["environment"].contains("torch_version"));

  std::ofstream(dir_ / "gone.json")
      << nlohmann::json{{"scenario", "gone"}, {"command", "ctrainer-bench gone --json g.json"}};
  const auto unknown = run_shell(kBench + " rerun '" + (dir_ / "gone.json").string() + "'");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.output.find("records 'gone', whose scenario this ctrainer-bench does not have"),
            std::string::npos)
      << unknown.output;
}

}  // namespace
