// The Trainer on several processes (DDPStrategy over Gloo), through the real launcher: results
// equal to one process with the same global batch, evaluation gathered in dataset order, a killed
// worker restarted and resumed, failing ranks that make the others exit, setup mismatches,
// per-rank logging, and loss-scaling overflow agreed on by every rank.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/parameter_text.h"
#include "support/process.h"
#include "trainer_ddp_jobs.h"

namespace {
namespace fs = std::filesystem;
using ctrainer::testing::parse_parameters;
using ctrainer::testing::read_text_file;
using namespace ctrainer::testing::trainer_ddp;

// ---- equivalence with one process ---------------------------------------------------------

struct Shape {
  int nproc;
  int accum;
};
class TrainerDDPEquivalence : public ::testing::TestWithParam<Shape> {};

TEST_P(TrainerDDPEquivalence, RanksAgreeAndMatchOneProcessWithTheSameGlobalBatch) {
  const auto [nproc, accum] = GetParam();
  const std::string name = std::to_string(nproc) + "x" + std::to_string(accum);
  constexpr int kPerDevice = 4;
  const fs::path ddp_dir = scratch("ddp_" + name), single_dir = scratch("single_" + name);
  const Args common = {"--gradient_accumulation_steps", std::to_string(accum)};

  Args ddp_flags = worker_args(ddp_dir, common);
  ddp_flags.insert(ddp_flags.end(), {"--per_device_train_batch_size", std::to_string(kPerDevice),
                                     "--per_device_eval_batch_size", "5"});
  const JobResult ddp = launch(ddp_dir, nproc, ddp_flags);
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;

  Args single_flags = worker_args(single_dir, common);
  single_flags.insert(single_flags.end(),
                      {"--per_device_train_batch_size", std::to_string(kPerDevice * nproc),
                       "--per_device_eval_batch_size", "5"});
  const JobResult single = single_process(single_dir, single_flags);
  ASSERT_EQ(single.exit_code, 0) << single.output;

  // Every rank holds the same parameters, bitwise, and they are the one-process result.
  expect_ranks_bitwise_equal(ddp_dir / "dump", nproc, ddp.output);
  const double diff = max_parameter_difference(read_text_file(ddp_dir / "dump/params.0.txt"),
                                               read_text_file(single_dir / "dump/params.0.txt"));
  EXPECT_LE(diff, 1e-5);
  std::printf("N=%d accum=%d: max |ddp - one process| = %g\n", nproc, accum, diff);

  // Evaluation: every rank gets the whole eval set back in dataset order, each example once
  // (37 examples: the sampler padded the shares), with the one-process metrics.
  const auto reference = read_json_if_exists(single_dir / "dump/eval.0.json");
  ASSERT_EQ(reference["labels"].size(), 37u);
  for (int rank = 0; rank < nproc; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const auto got =
        read_json_if_exists(ddp_dir / "dump" / ("eval." + std::to_string(rank) + ".json"));
    ASSERT_FALSE(got.is_null()) << ddp.output;
    EXPECT_EQ(got["labels"], reference["labels"]);  // exact: dataset order, no duplicates
    EXPECT_EQ(got["predictions"], reference["predictions"]);
    EXPECT_EQ(got["metrics"]["eval_accuracy"], reference["metrics"]["eval_accuracy"]);
    EXPECT_NEAR(got["metrics"]["eval_loss"].get<double>(),
                reference["metrics"]["eval_loss"].get<double>(), 1e-5);
    ASSERT_EQ(got["logits"].size(), reference["logits"].size());
    for (size_t i = 0; i < got["logits"].size(); ++i)
      ASSERT_NEAR(got["logits"][i].get<double>(), reference["logits"][i].get<double>(), 1e-4) << i;
  }
  // It learned something (chance is 1/3), so agreeing metrics are not trivial.
  EXPECT_GT(reference["metrics"]["eval_accuracy"].get<double>(), 0.5);

  // The logged loss is the mean over ranks: the one-process loss of the same global batches.
  const auto ddp_losses = logged_losses(ddp_dir / "out");
  const auto single_losses = logged_losses(single_dir / "out");
  ASSERT_EQ(ddp_losses.size(), single_losses.size());
  ASSERT_GE(ddp_losses.size(), 2u);
  for (size_t i = 0; i < ddp_losses.size(); ++i)
    EXPECT_NEAR(ddp_losses[i], single_losses[i], 1e-5) << "logged loss " << i;
  fs::remove_all(ddp_dir);
  fs::remove_all(single_dir);
}

INSTANTIATE_TEST_SUITE_P(WorldSizeAndAccumulation, TrainerDDPEquivalence,
                         ::testing::Values(Shape{2, 1}, Shape{2, 2}, Shape{3, 1}, Shape{3, 2}),
                         [](const auto& info) {
                           return "N" + std::to_string(info.param.nproc) + "_accum" +
                                  std::to_string(info.param.accum);
                         });

TEST(TrainerDDP, AnEvaluationSetSmallerThanTheWorldIsGatheredToo) {
  // 2 examples over 3 ranks: rank 2 evaluates nothing.
  const fs::path dir = scratch("tiny_eval");
  const JobResult run = launch(dir, 3,
                               worker_args(dir, {"--per_device_train_batch_size", "4",
                                                 "--max_steps", "1", "--num_eval_examples", "2"}));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (int rank = 0; rank < 3; ++rank) {
    const auto got = read_json_if_exists(dir / "dump" / ("eval." + std::to_string(rank) + ".json"));
    ASSERT_FALSE(got.is_null()) << run.output;
    EXPECT_EQ(got["labels"], nlohmann::json::array({0, 1})) << "rank " << rank;  // dataset order
    EXPECT_EQ(got["predictions"].size(), 2u);
  }
  fs::remove_all(dir);
}

// ---- restart after a killed worker ----------------------------------------------------------

/// Rank 1 fails after step 5 (`crash_mode`: kill, hang) in a job that checkpoints every 3 steps
/// and may restart once; the job must end bitwise as an uninterrupted one. Returns the failed
/// job's launcher output and time.
JobResult restart_after_failing_rank(const std::string& crash_mode, int ddp_timeout_seconds,
                                     const Args& launcher_flags = {}, const Args& strategy = {},
                                     const std::string& name = "ddp") {
  Args flags = {"--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2",
                "--dropout", "0.2", "--save_strategy", "steps", "--save_steps", "3",
                "--resume_from_checkpoint", "latest", "--log_level", "info",
                // Seed 1: the checkpoint at step 3 lands inside a logging window where the
                // ranks' loss sums differ, and restoring their mean on both ranks logged a
                // loss one float ulp off (here; seed 42 on the H100 machine's CPU).
                "--seed", "1", "--ddp_timeout", std::to_string(ddp_timeout_seconds)};
  flags.insert(flags.end(), strategy.begin(), strategy.end());
  const fs::path straight_dir = scratch("straight_" + crash_mode + "_" + name),
                 failed_dir = scratch("failed_" + crash_mode + "_" + name);
  const JobResult straight = launch(straight_dir, 2, worker_args(straight_dir, flags));
  EXPECT_EQ(straight.exit_code, 0) << straight.output;

  Args failed_flags = worker_args(failed_dir, flags);
  failed_flags.insert(failed_flags.end(),
                      {"--crash_at_step", "5", "--crash_rank", "1", "--crash_mode", crash_mode});
  Args restart = {"--max-restarts", "1"};
  restart.insert(restart.end(), launcher_flags.begin(), launcher_flags.end());
  const JobResult failed = launch(failed_dir, 2, failed_flags, restart);
  EXPECT_EQ(failed.exit_code, 0) << failed.output;
  EXPECT_NE(failed.output.find("Resuming from"), std::string::npos) << failed.output;

  // Dropout draws from the restored RNG state: only an exact resume ends bitwise equal.
  expect_ranks_bitwise_equal(failed_dir / "dump", 2, failed.output);
  EXPECT_EQ(read_text_file(failed_dir / "dump/params.0.txt"),
            read_text_file(straight_dir / "dump/params.0.txt"));
  EXPECT_EQ(read_json_if_exists(failed_dir / "dump/eval.0.json")["metrics"]["eval_loss"],
            read_json_if_exists(straight_dir / "dump/eval.0.json")["metrics"]["eval_loss"]);
  EXPECT_EQ(logged_losses(failed_dir / "out"), logged_losses(straight_dir / "out"));
  // Each rank wrote its own RNG state into the shared checkpoint.
  EXPECT_TRUE(fs::exists(failed_dir / "out/checkpoint-3/rng_state_0.json"));
  EXPECT_TRUE(fs::exists(failed_dir / "out/checkpoint-3/rng_state_1.json"));
  fs::remove_all(straight_dir);
  fs::remove_all(failed_dir);
  return failed;
}

TEST(TrainerDDP, KilledWorkerIsRestartedAndTheJobEndsAsAnUninterruptedOne) {
  const JobResult killed = restart_after_failing_rank("kill", 60);
  EXPECT_NE(killed.output.find("rank 1"), std::string::npos) << killed.output;
  EXPECT_NE(killed.output.find("SIGKILL"), std::string::npos) << killed.output;
}

struct StalledCollective {
  std::string name;
  Args strategy;
  std::string crash_mode;  ///< hang: after a step; hang_in_step: before the next one's forward
  std::string collective;  ///< the survivor's first collective after the stall
};

void PrintTo(const StalledCollective& c, std::ostream* out) {
  *out << c.name;
}

class TrainerStalledRank : public ::testing::TestWithParam<StalledCollective> {};

TEST_P(TrainerStalledRank, TimesOutAndTheRestartedJobEndsAsAnUninterruptedOne) {
  // Rank 1 stalls after step 5 or in step 6; rank 0's next collective gives up after
  // --ddp_timeout (5 s),
  // the launcher stops the stalled rank (SIGTERM, then SIGKILL after the 2 s grace period: a
  // stalled rank does not get to its signal check) and restarts both from checkpoint-3.
  const StalledCollective& c = GetParam();
  const JobResult hung =
      restart_after_failing_rank(c.crash_mode, 5, {"--grace-period", "2"}, c.strategy, c.name);
  EXPECT_NE(hung.output.find(c.collective + " failed on rank 0 of 2"), std::string::npos)
      << hung.output;
  EXPECT_NE(hung.output.find("timeout 5 s"), std::string::npos) << hung.output;
  EXPECT_LT(hung.seconds, 40) << hung.output;  // the timeout and grace, not the hang's hour
}

INSTANTIATE_TEST_SUITE_P(
    Collectives, TrainerStalledRank,
    ::testing::Values(
        // Between steps: the survivor's agreement on signals (an all-reduce) waits.
        StalledCollective{"ddp_after_step", {}, "hang", "all-reduce"},
        StalledCollective{"ddp_in_step", {}, "hang_in_step", "all-reduce"},
        StalledCollective{
            "zero2_in_step", {"--fsdp", "shard_grad_op"}, "hang_in_step", "reduce-scatter"},
        StalledCollective{"zero3_in_step", {"--fsdp", "full_shard"}, "hang_in_step", "all-gather"}),
    [](const auto& info) { return info.param.name; });

// ---- failing ranks --------------------------------------------------------------------------

/// Starts 2 ranks directly (torchrun's environment, no launcher); rank 1 fails after step 3 in
/// `mode`. Returns how rank 0 ended and after how long; `inspect` sees the run's folder (and
/// rank 1's exit code) before it is removed.
JobResult run_with_failing_rank(
    const std::string& mode, int timeout_seconds,
    const std::function<void(const fs::path& dir, int rank1_exit_code)>& inspect = {}) {
  const fs::path dir = scratch("failing_" + mode);
  const int port = ctrainer::testing::free_port();
  Args flags = worker_args(dir, {"--per_device_train_batch_size", "4", "--crash_at_step", "3",
                                 "--crash_rank", "1", "--crash_mode", mode});
  flags.insert(flags.end(), {"--ddp_timeout", std::to_string(timeout_seconds)});
  Args argv = {CTRAINER_TRAINER_DDP_WORKER};
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::vector<pid_t> pids;
  const auto start = std::chrono::steady_clock::now();
  for (int rank = 0; rank < 2; ++rank) {
    const auto env = ctrainer::testing::torchrun_environment(rank, 2, port);
    const fs::path log = dir / ("rank" + std::to_string(rank) + ".log");
    pids.push_back(ctrainer::testing::spawn_process(argv, log, log, env));
  }
  JobResult rank0;
  rank0.exit_code = ctrainer::testing::wait_for(pids[0]);
  rank0.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A rank 1 that is exiting on its own gets a few seconds (a loaded machine tears down
  // slowly); a hanging one is still there after them.
  for (int waited = 0; waited < 100; ++waited) {
    siginfo_t info{};
    // WNOWAIT: look without reaping, so wait_for below still gets the exit code.
    if (::waitid(P_PID, static_cast<id_t>(pids[1]), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid != 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pids[1], SIGKILL);
  const int rank1_exit_code = ctrainer::testing::wait_for(pids[1]);
  rank0.output = read_text_file(dir / "rank0.log") + read_text_file(dir / "rank1.log");
  if (inspect) inspect(dir, rank1_exit_code);
  fs::remove_all(dir);
  return rank0;
}

TEST(TrainerDDP, ACrashedRankMakesTheOthersExitWithAnError) {
  // The peer's sockets close: the survivor fails at its next collective, long before the
  // 60 s timeout.
  const JobResult rank0 = run_with_failing_rank("exit", 60);
  EXPECT_EQ(rank0.exit_code, 1) << rank0.output;
  EXPECT_LT(rank0.seconds, 30) << rank0.output;
  EXPECT_NE(rank0.output.find("failed on rank 0 of 2"), std::string::npos) << rank0.output;
  EXPECT_NE(rank0.output.find("A peer crashed or hung"), std::string::npos) << rank0.output;
}

TEST(TrainerDDP, ASignalToOneRankStopsEveryRankAfterTheSameStepWithOneCheckpoint) {
  // Rank 1 alone gets SIGTERM after step 3; the ranks agree on it after that step, write
  // checkpoint-3 together (every rank's RNG file in it) and exit with 128 + 15.
  int rank1_code = -1;
  bool checkpoint_complete = false;
  std::vector<std::string> checkpoints;
  const JobResult rank0 =
      run_with_failing_rank("sigterm", 60, [&](const fs::path& dir, int rank1_exit_code) {
        rank1_code = rank1_exit_code;
        for (const auto& entry : fs::directory_iterator(dir / "out"))
          if (entry.path().filename().string().rfind("checkpoint-", 0) == 0)
            checkpoints.push_back(entry.path().filename());
        const fs::path folder = dir / "out" / "checkpoint-3";
        checkpoint_complete = fs::exists(folder / "manifest.json") &&
                              fs::exists(folder / "rng_state_0.json") &&
                              fs::exists(folder / "rng_state_1.json");
      });
  EXPECT_EQ(rank0.exit_code, 143) << rank0.output;
  EXPECT_EQ(rank1_code, 143) << rank0.output;
  EXPECT_EQ(checkpoints, std::vector<std::string>{"checkpoint-3"}) << rank0.output;
  EXPECT_TRUE(checkpoint_complete) << rank0.output;
  for (const std::string rank : {"[rank 0]", "[rank 1]"}) {
    bool found = false;
    std::istringstream lines(rank0.output);
    for (std::string line; std::getline(lines, line);)
      found |= line.find(rank) != std::string::npos &&
               line.find("received SIGTERM at step 3") != std::string::npos;
    EXPECT_TRUE(found) << rank << " did not report the signal\n" << rank0.output;
  }
}

TEST(TrainerDDP, AHangingRankMakesTheOthersExitAfterTheTimeout) {
  const JobResult rank0 = run_with_failing_rank("hang", 5);
  EXPECT_EQ(rank0.exit_code, 1) << rank0.output;
  EXPECT_GE(rank0.seconds, 5) << rank0.output;
  EXPECT_LT(rank0.seconds, 40) << rank0.output;  // the timeout, plus start-up and training
  EXPECT_NE(rank0.output.find("failed on rank 0 of 2"), std::string::npos) << rank0.output;
  EXPECT_NE(rank0.output.find("timeout 5 s"), std::string::npos) << rank0.output;
}

TEST(TrainerDDP, RanksStartedDifferentlyFailAtSetup) {
  struct Mismatch {
    Args flags;
    std::string expected;
  };
  const std::vector<Mismatch> cases = {
      {{"--rank1_hidden_size", "8"},
       "the model differs between ranks: rank 0 has parameter layers.0.weight [16, 4] Float "
       "trainable but rank 1 has parameter layers.0.weight [8, 4] Float trainable"},
      {{"--rank1_learning_rate", "0.5"},
       "the command line differs between ranks: rank 0 has --learning_rate 0.2 but rank 1 has "
       "--learning_rate 0.5; start every rank with the same arguments"},
  };
  for (const auto& mismatch : cases) {
    SCOPED_TRACE(mismatch.expected);
    const fs::path dir = scratch("mismatch");
    const JobResult run = launch(dir, 2, worker_args(dir, mismatch.flags));
    EXPECT_EQ(run.exit_code, 2) << run.output;  // ArgumentError
    EXPECT_NE(run.output.find(mismatch.expected), std::string::npos) << run.output;
    EXPECT_FALSE(fs::exists(dir / "dump/params.0.txt"));
    fs::remove_all(dir);
  }
}

// ---- loss scaling: one rank overflows, every rank skips --------------------------------------

TEST(TrainerDDP, WhenOnlyOneRankSeesAnInfEveryRankSkipsThatStep) {
  const fs::path dir = scratch("overflow");
  const JobResult run =
      launch(dir, 2,
             worker_args(dir, {"--per_device_train_batch_size", "4", "--max_steps", "6",
                               "--loss_scaling", "true", "--poison_at_step", "3", "--poison_rank",
                               "1", "--log_level", "info", "--log_level_replica", "info"}),
             {"--redirects", "3", "--log-dir", (dir / "logs").string()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // Had rank 0 stepped while rank 1 skipped, their parameters would differ.
  expect_ranks_bitwise_equal(dir / "dump", 2, run.output);
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    // The scale after each of the 6 steps: halved by the overflow of step 3, on both ranks.
    EXPECT_EQ(read_text_file(dir / "dump" / ("scale." + std::to_string(rank) + ".txt")),
              "65536\n65536\n32768\n32768\n32768\n32768\n");
    const std::string log =
        read_text_file(dir / "logs/attempt_0" / std::to_string(rank) / "stderr.log");
    EXPECT_NE(log.find("[rank " + std::to_string(rank) +
                       "] [info] step 3: gradients overflowed (inf/NaN) at loss scale 65536; "
                       "optimizer and scheduler step skipped, loss scale now 32768"),
              std::string::npos)
        << log;
  }
  fs::remove_all(dir);
}

// ---- per-rank logging -----------------------------------------------------------------------

/// The ctrainer log lines ("[date] [rank R] [level] message") of a log file.
std::vector<std::string> log_lines(const std::string& text) {
  static const std::regex line_pattern(R"(^\[[0-9-]+ [0-9:.]+\] \[rank \d+\] \[\w+\] .*)");
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, line_pattern)) lines.push_back(line);
  return lines;
}

size_t count_containing(const std::vector<std::string>& lines, const std::string& needle) {
  size_t n = 0;
  for (const auto& line : lines) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

TEST(TrainerDDP, LogLevelAndLogLevelReplicaApplyPerRank) {
  for (const std::string replica : {"warning", "info"}) {
    SCOPED_TRACE("--log_level_replica " + replica);
    const fs::path dir = scratch("logging_" + replica);
    const JobResult run =
        launch(dir, 2,
               worker_args(dir, {"--per_device_train_batch_size", "8", "--max_steps", "2",
                                 "--log_level", "info", "--log_level_replica", replica}),
               {"--redirects", "3", "--log-dir", (dir / "logs").string()});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    for (int rank = 0; rank < 2; ++rank) {
      const std::string text =
          read_text_file(dir / "logs/attempt_0" / std::to_string(rank) / "stderr.log");
      const auto lines = log_lines(text);
      // Every line carries its own rank.
      EXPECT_EQ(count_containing(lines, "[rank " + std::to_string(rank) + "]"), lines.size())
          << text;
      const bool logs_info = rank == 0 || replica == "info";
      EXPECT_EQ(count_containing(lines, "] [info] ***** Running training *****"),
                logs_info ? 1u : 0u)
          << "rank " << rank << ":\n"
          << text;
      if (!logs_info) EXPECT_EQ(count_containing(lines, "] [info] "), 0u) << text;
    }
    fs::remove_all(dir);
  }
}

TEST(TrainerDDP, LogOnEachNodeDecidesWhetherEachNodesFirstProcessLogs) {
  // Two "nodes" of one process each on this host: rank 1 is the first (local rank 0) process
  // of node 1. log_on_each_node (HF's default, true) makes it log at --log_level; false leaves
  // only the world's rank 0 at that level.
  for (const bool on_each_node : {true, false}) {
    SCOPED_TRACE(on_each_node ? "log_on_each_node true" : "log_on_each_node false");
    const fs::path dir = scratch(on_each_node ? "nodes_each" : "nodes_main");
    const int port = ctrainer::testing::free_port();
    std::vector<pid_t> nodes;
    for (int node = 0; node < 2; ++node) {
      Args argv = {CTRAINER_RUN_BINARY,
                   "--nnodes",
                   "2",
                   "--node-rank",
                   std::to_string(node),
                   "--nproc-per-node",
                   "1",
                   "--master-addr",
                   "127.0.0.1",
                   "--master-port",
                   std::to_string(port),
                   "--redirects",
                   "3",
                   "--log-dir",
                   (dir / ("node" + std::to_string(node))).string(),
                   CTRAINER_TRAINER_DDP_WORKER};
      const Args flags = worker_args(dir, {"--per_device_train_batch_size", "8", "--max_steps", "2",
                                           "--log_level", "info", "--log_level_replica", "error",
                                           "--log_on_each_node", on_each_node ? "true" : "false"});
      argv.insert(argv.end(), flags.begin(), flags.end());
      const fs::path log = dir / ("node" + std::to_string(node) + ".log");
      nodes.push_back(ctrainer::testing::spawn_process(argv, log, log));
    }
    for (int node = 0; node < 2; ++node)
      ASSERT_EQ(ctrainer::testing::wait_for(nodes[static_cast<size_t>(node)]), 0)
          << read_text_file(dir / ("node" + std::to_string(node) + ".log"));
    const auto rank1 = log_lines(read_text_file(dir / "node1/attempt_0/0/stderr.log"));
    EXPECT_EQ(count_containing(rank1, "[rank 1] [info] ***** Running training *****"),
              on_each_node ? 1u : 0u);
    const auto rank0 = log_lines(read_text_file(dir / "node0/attempt_0/0/stderr.log"));
    EXPECT_EQ(count_containing(rank0, "[rank 0] [info] ***** Running training *****"), 1u);
    fs::remove_all(dir);
  }
}

}  // namespace
