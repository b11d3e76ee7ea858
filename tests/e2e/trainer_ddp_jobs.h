#pragma once
// What the multi-process Trainer tests (trainer_ddp_test.cpp, trainer_ddp_lm_test.cpp) share:
// scratch folders, the worker's common flags, jobs through ctrainer-run or as one process (the
// programs' paths are the compile definitions CTRAINER_RUN_BINARY and
// CTRAINER_TRAINER_DDP_WORKER), and reading what the worker dumps.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/parameter_text.h"
#include "support/process.h"
#include "support/tiny_mrpc.h"

namespace ctrainer::testing::trainer_ddp {

namespace fs = std::filesystem;
using Args = std::vector<std::string>;

/// A fresh scratch folder for one test run.
inline fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("ctrainer_trainer_ddp_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir / "dump");
  return dir;
}

/// The worker's flags for a short, deterministic SGD run that dumps its results.
inline Args worker_args(const fs::path& dir, const Args& extra) {
  Args args = {"--output_dir",
               (dir / "out").string(),
               "--dump_dir",
               (dir / "dump").string(),
               "--do_train",
               "--optim",
               "sgd",
               "--learning_rate",
               "0.2",
               "--num_train_epochs",
               "2",
               "--logging_steps",
               "2",
               "--save_strategy",
               "no",
               "--report_to",
               "none",
               "--disable_tqdm",
               "true",
               "--ddp_timeout",
               "60"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

struct JobResult {
  int exit_code = -1;
  std::string output;  ///< the launcher's stdout and stderr
  double seconds = 0;
};

/// `ctrainer-run --standalone --nproc-per-node N [launcher flags] worker [worker flags]`.
inline JobResult launch(const fs::path& dir, int nproc, const Args& worker_flags,
                        const Args& launcher_flags = {}) {
  Args argv = {CTRAINER_RUN_BINARY, "--standalone", "--nproc-per-node", std::to_string(nproc)};
  argv.insert(argv.end(), launcher_flags.begin(), launcher_flags.end());
  argv.push_back(CTRAINER_TRAINER_DDP_WORKER);
  argv.insert(argv.end(), worker_flags.begin(), worker_flags.end());
  const auto start = std::chrono::steady_clock::now();
  JobResult run;
  run.exit_code = ctrainer::testing::wait_for(
      ctrainer::testing::spawn_process(argv, dir / "launcher.log", dir / "launcher.log"));
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.output = read_text_file(dir / "launcher.log");
  return run;
}

/// The worker as one process, without a launcher.
inline JobResult single_process(const fs::path& dir, const Args& worker_flags) {
  Args argv = {CTRAINER_TRAINER_DDP_WORKER};
  argv.insert(argv.end(), worker_flags.begin(), worker_flags.end());
  JobResult run;
  run.exit_code = ctrainer::testing::wait_for(
      ctrainer::testing::spawn_process(argv, dir / "single.log", dir / "single.log"));
  run.output = read_text_file(dir / "single.log");
  return run;
}

// Reading a run's logs and JSON results (support/tiny_mrpc.h).
using ctrainer::testing::logged_losses;
using ctrainer::testing::read_json_if_exists;

inline void expect_ranks_bitwise_equal(const fs::path& dump, int nproc, const std::string& output) {
  const std::string rank0 = read_text_file(dump / "params.0.txt");
  ASSERT_FALSE(rank0.empty()) << output;
  for (int rank = 1; rank < nproc; ++rank)
    EXPECT_EQ(read_text_file(dump / ("params." + std::to_string(rank) + ".txt")), rank0)
        << "rank " << rank << "'s parameters differ from rank 0's";
}

inline double max_parameter_difference(const std::string& a, const std::string& b) {
  const auto pa = parse_parameters(a), pb = parse_parameters(b);
  EXPECT_EQ(pa.size(), pb.size());
  double diff = 0;
  for (const auto& [name, values] : pa) {
    EXPECT_TRUE(pb.count(name)) << name;
    if (!pb.count(name)) continue;
    EXPECT_EQ(values.size(), pb.at(name).size()) << name;
    for (size_t i = 0; i < values.size() && i < pb.at(name).size(); ++i)
      diff = std::max(diff, std::abs(values[i] - pb.at(name)[i]));
  }
  return diff;
}

}  // namespace ctrainer::testing::trainer_ddp
