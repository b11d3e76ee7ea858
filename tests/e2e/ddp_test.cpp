// DDPStrategy through the real launcher: ctrainer-run starts N ranks of ddp_worker, which train
// the same model on their shards of one global batch. Every rank must end with bitwise the same
// parameters, and those must match a single-process run on the whole batch.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/parameter_text.h"
#include "support/process.h"

namespace {
namespace fs = std::filesystem;
using ctrainer::testing::parse_parameters;
using ctrainer::testing::read_text_file;

/// Runs `argv` with stdout and stderr in files under `dir`; returns the exit code (or 128 +
/// signal).
int run(const std::vector<std::string>& argv, const fs::path& dir) {
  return ctrainer::testing::wait_for(
      ctrainer::testing::spawn_process(argv, dir / "launcher.out", dir / "launcher.err"));
}

struct Case {
  int nproc;
  int accum;
  bool unused_parameter = false;
};

class DDPStrategyE2E : public ::testing::TestWithParam<Case> {};

TEST_P(DDPStrategyE2E, RanksAgreeBitwiseAndMatchTheSingleProcessRun) {
  const auto [nproc, accum, unused_parameter] = GetParam();
  const fs::path dir = fs::temp_directory_path() /
                       ("ctrainer_ddp_" + std::to_string(::getpid()) + "_" + std::to_string(nproc) +
                        "x" + std::to_string(accum) + (unused_parameter ? "u" : ""));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int code =
      run({CTRAINER_RUN_BINARY, "--standalone", "--nproc-per-node", std::to_string(nproc),
           CTRAINER_DDP_WORKER, "--out", dir.string(), "--accum", std::to_string(accum), "--steps",
           "3", "--unused-parameter", unused_parameter ? "1" : "0"},
          dir);
  const std::string out = read_text_file(dir / "launcher.out");
  const std::string err = read_text_file(dir / "launcher.err");
  ASSERT_EQ(code, 0) << out << err;

  const std::string rank0 = read_text_file(dir / "params.0.txt");
  ASSERT_FALSE(rank0.empty()) << out << err;
  for (int rank = 1; rank < nproc; ++rank)
    EXPECT_EQ(read_text_file(dir / ("params." + std::to_string(rank) + ".txt")), rank0)
        << "rank " << rank << " differs from rank 0";

  const auto trained = parse_parameters(rank0);
  const auto reference = parse_parameters(read_text_file(dir / "reference.txt"));
  ASSERT_EQ(trained.size(), reference.size());
  ASSERT_GE(trained.size(), 6u);
  double max_diff = 0;
  for (const auto& [name, values] : reference) {
    ASSERT_TRUE(trained.count(name)) << name;
    const auto& got = trained.at(name);
    ASSERT_EQ(got.size(), values.size()) << name;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double diff = std::abs(got[i] - values[i]);
      max_diff = std::max(max_diff, diff);
      EXPECT_LE(diff, 1e-5) << name << "[" << i << "]: " << got[i] << " vs " << values[i];
    }
  }
  std::printf("N=%d accum=%d: max |ddp - single process| = %g\n", nproc, accum, max_diff);
  // The run must have trained (so that agreeing weights are not trivially the initial ones)
  // with several buckets (so that their ordering and overlap are exercised).
  EXPECT_NE(out.find("step 2: loss"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 0 of " + std::to_string(nproc) + ": "), std::string::npos) << out;
  EXPECT_EQ(out.find(": 1 buckets"), std::string::npos) << out;
  // Unused parameters are reduced at the end of backward, which find_unused_parameters=false
  // reports once; without them every bucket is launched from the hooks, silently.
  EXPECT_EQ((out + err).find("were not complete at the end of backward") != std::string::npos,
            unused_parameter)
      << out << err;
  if (unused_parameter) {
    ASSERT_TRUE(trained.count("unused"));
    for (double v : trained.at("unused")) EXPECT_EQ(v, 1.0);  // zero gradient, no decay
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(WorldSizeAndAccumulation, DDPStrategyE2E,
                         ::testing::Values(Case{2, 1}, Case{2, 2}, Case{3, 1}, Case{3, 2},
                                           Case{2, 2, true}, Case{3, 1, true}),
                         [](const auto& info) {
                           return "N" + std::to_string(info.param.nproc) + "_accum" +
                                  std::to_string(info.param.accum) +
                                  (info.param.unused_parameter ? "_unused" : "");
                         });

// DDPOptions::overlap_with_backward changes when each bucket's all-reduce starts, not what it
// sums: training without overlap must end with bitwise the parameters of the overlapped run,
// and the statistics must show that it really launched no bucket during backward.
TEST(DDPStrategyOverlapE2E, OffGivesBitwiseTheParametersOfOn) {
  std::map<bool, std::string> parameters;
  for (const bool overlap : {true, false}) {
    const fs::path dir =
        fs::temp_directory_path() /
        ("ctrainer_ddp_overlap_" + std::to_string(::getpid()) + (overlap ? "_on" : "_off"));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const int code = run(
        {CTRAINER_RUN_BINARY, "--standalone", "--nproc-per-node", "2", CTRAINER_DDP_WORKER, "--out",
         dir.string(), "--accum", "2", "--steps", "3", "--overlap", overlap ? "1" : "0"},
        dir);
    const std::string out = read_text_file(dir / "launcher.out");
    const std::string err = read_text_file(dir / "launcher.err");
    ASSERT_EQ(code, 0) << out << err;
    parameters[overlap] = read_text_file(dir / "params.0.txt");
    ASSERT_FALSE(parameters[overlap].empty()) << out << err;
    EXPECT_EQ(read_text_file(dir / "params.1.txt"), parameters[overlap]) << "overlap " << overlap;

    std::smatch stats;
    ASSERT_TRUE(std::regex_search(
        out, stats,
        std::regex(
            R"(last sync: (\d+) of (\d+) buckets launched in backward, (\d+) bytes reduced of (\d+))")))
        << out;
    const int launched = std::stoi(stats[1]), buckets = std::stoi(stats[2]);
    EXPECT_GE(buckets, 2);
    EXPECT_EQ(launched, overlap ? buckets : 0) << out;
    EXPECT_EQ(stats[3].str(), stats[4].str()) << "every gradient byte is reduced once";
    EXPECT_EQ((out + err).find("were not complete"), std::string::npos) << out << err;
    fs::remove_all(dir);
  }
  EXPECT_EQ(parameters[false], parameters[true]);
}

}  // namespace
