// A program killed, or its disk failing, in the middle of writing a checkpoint (issue 19,
// item 3), through the real binary and CTRAINER_TEST_WRITE_FAULT (core/write_faults.h):
// - SIGKILL just before each of several files of the step-20 save: checkpoint-10 stays
//   complete, the temporary folder of the killed save is what is left, and the same command run
//   again resumes from checkpoint-10, removes the stale folder at its next save and ends with
//   the uninterrupted run's weights and losses;
// - ENOSPC / EIO on a file: exit code 1 and an error naming the file, nothing half-written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/process.h"

namespace {
namespace fs = std::filesystem;
using ctrainer::testing::run_job;

std::vector<std::string> train_command(const fs::path& out) {
  return {CTRAINER_EXAMPLE_BINARY,
          "--output_dir",
          out.string(),
          "--do_train",
          "--max_steps",
          "30",
          "--num_train_examples",
          "600",
          "--per_device_train_batch_size",
          "32",
          "--logging_steps",
          "5",
          "--save_steps",
          "10",
          "--disable_tqdm",
          "--log_level",
          "warning"};
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<nlohmann::json> losses(const fs::path& out) {
  std::vector<nlohmann::json> result;
  std::ifstream in(out / "trainer_log.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) result.push_back(j);
  }
  return result;
}

std::vector<std::string> hidden_entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string()[0] == '.') out.push_back(entry.path().filename());
  return out;
}

class SaveFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("ctrainer_save_faults_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    reference_ = root_ / "reference";
    ASSERT_EQ(run_job(train_command(reference_), root_ / "reference.log").exit_code, 0);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_, reference_;
};

TEST_F(SaveFaults, KilledWhileSavingResumesFromThePreviousCheckpoint) {
  for (const char* file :
       {"model.safetensors", "optimizer.safetensors", "trainer_state.json", "manifest.json"}) {
    SCOPED_TRACE(file);
    const fs::path out = root_ / (std::string("killed_") + file);
    const auto killed = run_job(train_command(out), root_ / "killed.log",
                                {{"CTRAINER_TEST_WRITE_FAULT", std::string(file) + "@20:SIGKILL"}});
    ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.output;
    EXPECT_TRUE(fs::exists(out / "checkpoint-10" / "manifest.json"));
    EXPECT_FALSE(fs::exists(out / "checkpoint-20"));
    const auto stale = hidden_entries(out);
    ASSERT_EQ(stale.size(), 1u);
    EXPECT_EQ(stale[0].rfind(".tmp-checkpoint-20-", 0), 0u) << stale[0];

    const auto resumed = run_job(train_command(out), root_ / "resumed.log");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("removed " + (out / stale[0]).string()), std::string::npos)
        << resumed.output;
    EXPECT_TRUE(hidden_entries(out).empty());
    EXPECT_TRUE(read_bytes(out / "checkpoint-30" / "model.safetensors") ==
                read_bytes(reference_ / "checkpoint-30" / "model.safetensors"))
        << "final weights differ from the uninterrupted run";
    EXPECT_EQ(losses(out), losses(reference_));
  }
}

TEST_F(SaveFaults, ADiskErrorEndsTheRunNamingTheFile) {
  for (const auto& [fault, message] : std::vector<std::pair<std::string, std::string>>{
           {"optimizer.safetensors@20:ENOSPC", "No space left on device"},
           {"rng_state.json@20:EIO", "Input/output error"}}) {
    SCOPED_TRACE(fault);
    const fs::path out = root_ / ("disk_" + fault.substr(0, fault.find('@')));
    const auto failed =
        run_job(train_command(out), root_ / "disk.log", {{"CTRAINER_TEST_WRITE_FAULT", fault}});
    EXPECT_EQ(failed.exit_code, 1) << failed.output;
    EXPECT_NE(failed.output.find(fault.substr(0, fault.find('@'))), std::string::npos)
        << failed.output;
    EXPECT_NE(failed.output.find(message), std::string::npos) << failed.output;
    EXPECT_TRUE(fs::exists(out / "checkpoint-10" / "manifest.json"));
    EXPECT_FALSE(fs::exists(out / "checkpoint-20"));
    EXPECT_TRUE(hidden_entries(out).empty());
  }
  const auto malformed = run_job(train_command(root_ / "malformed"), root_ / "malformed.log",
                                 {{"CTRAINER_TEST_WRITE_FAULT", "model.safetensors:EFULL"}});
  EXPECT_NE(malformed.exit_code, 0);
  EXPECT_NE(malformed.output.find("CTRAINER_TEST_WRITE_FAULT=model.safetensors:EFULL"),
            std::string::npos)
      << malformed.output;
}

}  // namespace
