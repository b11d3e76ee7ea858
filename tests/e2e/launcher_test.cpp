// ctrainer-run through the real binary: the environment of each worker, failure reports and
// exit codes, restarts, signal forwarding, log files, and a 2-process Gloo job whose ranks
// build the process group from that environment.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/process.h"

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// A fresh folder per test and process (ctest runs tests in parallel).
fs::path scratch_dir() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::temp_directory_path() /
                       ("ctrainer_launcher_" + std::to_string(::getpid()) + "_" + test->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using ctrainer::testing::spawn_process;
using ctrainer::testing::wait_for;

struct LaunchResult {
  int code = -1;
  std::string out;
  std::string err;
  double seconds = 0;
};

/// Runs ctrainer-run with `launcher_args`, then the test worker with `worker_args`.
LaunchResult run_launcher(const fs::path& dir, const std::vector<std::string>& launcher_args,
                          const std::string& worker, const std::vector<std::string>& worker_args,
                          const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv = {CTRAINER_RUN_BINARY};
  argv.insert(argv.end(), launcher_args.begin(), launcher_args.end());
  argv.push_back(worker);
  argv.insert(argv.end(), worker_args.begin(), worker_args.end());
  const auto start = Clock::now();
  LaunchResult run;
  run.code = wait_for(spawn_process(argv, dir / "launcher.out", dir / "launcher.err", env));
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  run.out = read_file(dir / "launcher.out");
  run.err = read_file(dir / "launcher.err");
  return run;
}

std::map<std::string, std::string> read_env_file(const fs::path& path) {
  std::map<std::string, std::string> vars;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return vars;
}

bool wait_until_exists(const std::vector<fs::path>& paths, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    bool all = true;
    for (const auto& p : paths) all = all && fs::exists(p);
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

using ctrainer::testing::free_port;

const std::string kWorker = CTRAINER_LAUNCHER_WORKER;
const std::string kGlooWorker = CTRAINER_GLOO_WORKER;

TEST(Launcher, SetsTorchrunEnvironmentForEachRank) {
  const fs::path dir = scratch_dir();
  ::unsetenv("OMP_NUM_THREADS");
  // Node 1 of 2 with two workers each: ranks 2 and 3. Underscore and dash spellings mixed.
  const LaunchResult run = run_launcher(
      dir,
      {"--nnodes", "2", "--node_rank=1", "--nproc_per_node", "2", "--master-addr", "10.1.2.3",
       "--master_port", "12345", "--rdzv-id", "job7", "--max-restarts", "3"},
      kWorker, {"--out", dir.string()});
  ASSERT_EQ(run.code, 0) << run.err;
  for (int local = 0; local < 2; ++local) {
    const int rank = 2 + local;
    const auto env = read_env_file(dir / ("env." + std::to_string(rank) + ".0"));
    EXPECT_EQ(env.at("RANK"), std::to_string(rank));
    EXPECT_EQ(env.at("LOCAL_RANK"), std::to_string(local));
    EXPECT_EQ(env.at("WORLD_SIZE"), "4");
    EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
    EXPECT_EQ(env.at("GROUP_RANK"), "1");
    EXPECT_EQ(env.at("GROUP_WORLD_SIZE"), "2");
    EXPECT_EQ(env.at("ROLE_RANK"), std::to_string(rank));
    EXPECT_EQ(env.at("ROLE_WORLD_SIZE"), "4");
    EXPECT_EQ(env.at("ROLE_NAME"), "default");
    EXPECT_EQ(env.at("MASTER_ADDR"), "10.1.2.3");
    EXPECT_EQ(env.at("MASTER_PORT"), "12345");
    EXPECT_EQ(env.at("TORCHELASTIC_RESTART_COUNT"), "0");
    EXPECT_EQ(env.at("TORCHELASTIC_MAX_RESTARTS"), "3");
    EXPECT_EQ(env.at("TORCHELASTIC_RUN_ID"), "job7");
    EXPECT_EQ(env.at("TORCHELASTIC_USE_AGENT_STORE"), "False");
    EXPECT_EQ(env.at("OMP_NUM_THREADS"), "1");  // unset + several workers: torchrun sets 1
  }
  EXPECT_FALSE(fs::exists(dir / "env.0.0"));
  EXPECT_NE(run.err.find("OMP_NUM_THREADS=1"), std::string::npos) << run.err;
}

TEST(Launcher, RdzvEndpointAndKeptOmpThreads) {
  const fs::path dir = scratch_dir();
  const LaunchResult run =
      run_launcher(dir, {"--rdzv-endpoint", "node7:4242", "--nproc-per-node", "1"}, kWorker,
                   {"--out", dir.string()}, {{"OMP_NUM_THREADS", "5"}});
  ASSERT_EQ(run.code, 0) << run.err;
  const auto env = read_env_file(dir / "env.0.0");
  EXPECT_EQ(env.at("MASTER_ADDR"), "node7");
  EXPECT_EQ(env.at("MASTER_PORT"), "4242");
  EXPECT_EQ(env.at("WORLD_SIZE"), "1");
  EXPECT_EQ(env.at("TORCHELASTIC_RUN_ID"), "none");
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "5");
}

TEST(Launcher, StandalonePicksAFreeLocalPort) {
  const fs::path dir = scratch_dir();
  const LaunchResult run = run_launcher(dir, {"--standalone", "--nproc-per-node", "2"}, kWorker,
                                        {"--out", dir.string()});
  ASSERT_EQ(run.code, 0) << run.err;
  const auto env0 = read_env_file(dir / "env.0.0");
  const auto env1 = read_env_file(dir / "env.1.0");
  EXPECT_EQ(env0.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_NE(env0.at("MASTER_PORT"), "29500");
  EXPECT_EQ(env0.at("MASTER_PORT"), env1.at("MASTER_PORT"));
  EXPECT_EQ(env0.at("TORCHELASTIC_RUN_ID").size(), 16u);  // a random id, as torchrun gives
}

TEST(Launcher, ReportsFailedRankStopsOthersAndExitsWithItsCode) {
  const fs::path dir = scratch_dir();
  const LaunchResult run = run_launcher(
      dir, {"--nproc-per-node", "2"}, kWorker,
      {"--out", dir.string(), "--fail-rank", "1", "--fail-code", "7", "--sleep", "60"});
  EXPECT_EQ(run.code, 7) << run.err;
  EXPECT_LT(run.seconds, 30);  // rank 0 was stopped, not waited for
  const std::string line = "rank 1 (local 1, pid ";
  const auto at = run.err.find(line);
  ASSERT_NE(at, std::string::npos) << run.err;
  EXPECT_NE(run.err.find(") failed: exit code 7", at), std::string::npos) << run.err;
  EXPECT_TRUE(fs::exists(dir / "term.0.0")) << "rank 0 did not get SIGTERM\n" << run.err;
  EXPECT_FALSE(fs::exists(dir / "env.0.1"));  // --max-restarts 0: no second attempt
}

TEST(Launcher, ReportsWorkerKilledBySignal) {
  const fs::path dir = scratch_dir();
  const LaunchResult run =
      run_launcher(dir, {"--nproc-per-node", "2"}, kWorker,
                   {"--out", dir.string(), "--kill-rank", "0", "--sleep", "60"});
  EXPECT_EQ(run.code, 128 + SIGKILL) << run.err;
  EXPECT_NE(run.err.find("rank 0 (local 0, pid "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("failed: killed by signal SIGKILL"), std::string::npos) << run.err;
}

TEST(Launcher, RestartsTheGroupWithIncrementedRestartCount) {
  const fs::path dir = scratch_dir();
  // Rank 1 fails on the first attempt only; the second attempt succeeds.
  const LaunchResult run =
      run_launcher(dir, {"--nproc-per-node", "2", "--max-restarts", "2"}, kWorker,
                   {"--out", dir.string(), "--fail-rank", "1", "--fail-code", "5", "--fail-until",
                    "1", "--sleep", "0.5"});
  EXPECT_EQ(run.code, 0) << run.err;
  // Rank 0 may be stopped before it wrote its first file; the second attempt has both ranks.
  for (const auto& [rank, attempt] : std::vector<std::pair<int, int>>{{1, 0}, {0, 1}, {1, 1}}) {
    const auto env =
        read_env_file(dir / ("env." + std::to_string(rank) + "." + std::to_string(attempt)));
    ASSERT_FALSE(env.empty()) << "rank " << rank << " attempt " << attempt << "\n" << run.err;
    EXPECT_EQ(env.at("TORCHELASTIC_RESTART_COUNT"), std::to_string(attempt));
    EXPECT_EQ(env.at("TORCHELASTIC_MAX_RESTARTS"), "2");
  }
  EXPECT_FALSE(fs::exists(dir / "env.0.2"));
  EXPECT_FALSE(fs::exists(dir / "env.1.2"));
  EXPECT_NE(run.err.find("failed: exit code 5"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("restarting the workers (restart 1 of 2"), std::string::npos) << run.err;
}

TEST(Launcher, ExitsWithTheFailureWhenRestartsAreUsedUp) {
  const fs::path dir = scratch_dir();
  const LaunchResult run =
      run_launcher(dir, {"--nproc-per-node", "2", "--max-restarts", "1"}, kWorker,
                   {"--out", dir.string(), "--fail-rank", "0", "--fail-code", "4"});
  EXPECT_EQ(run.code, 4) << run.err;
  EXPECT_TRUE(fs::exists(dir / "env.0.0"));
  EXPECT_TRUE(fs::exists(dir / "env.0.1"));
  EXPECT_FALSE(fs::exists(dir / "env.0.2"));
  EXPECT_NE(run.err.find("all 1 restarts used"), std::string::npos) << run.err;
}

TEST(Launcher, KillsWorkersThatIgnoreSigtermAfterTheGracePeriod) {
  const fs::path dir = scratch_dir();
  const LaunchResult run =
      // --out: rank 1 fails only once rank 0 has started ignoring SIGTERM (under load it
      // failed first and rank 0 died of the SIGTERM, so no SIGKILL was needed).
      run_launcher(dir, {"--nproc-per-node", "2", "--grace-period", "0.5"}, kWorker,
                   {"--out", dir.string(), "--fail-rank", "1", "--fail-code", "9", "--ignore-term",
                    "--sleep", "60"});
  EXPECT_EQ(run.code, 9) << run.err;
  EXPECT_LT(run.seconds, 20);
  EXPECT_NE(run.err.find("did not stop after SIGTERM: sending SIGKILL"), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("rank 0 (local 0, pid "), std::string::npos) << run.err;
}

TEST(Launcher, ForwardsSigtermToEveryWorker) {
  const fs::path dir = scratch_dir();
  std::vector<std::string> argv = {
      CTRAINER_RUN_BINARY, "--nproc-per-node", "2", "--max-restarts", "3", kWorker, "--out",
      dir.string(),        "--sleep",          "60"};
  const pid_t launcher = spawn_process(argv, dir / "launcher.out", dir / "launcher.err");
  ASSERT_TRUE(wait_until_exists({dir / "env.0.0", dir / "env.1.0"}, 30));
  ::kill(launcher, SIGTERM);
  const int code = wait_for(launcher);
  const std::string err = read_file(dir / "launcher.err");
  EXPECT_EQ(code, 128 + SIGTERM) << err;  // the workers' status: 143 each
  EXPECT_TRUE(fs::exists(dir / "term.0.0")) << err;
  EXPECT_TRUE(fs::exists(dir / "term.1.0")) << err;
  EXPECT_FALSE(fs::exists(dir / "env.0.1")) << "a stop by the user must not restart\n" << err;
  EXPECT_NE(err.find("received SIGTERM: forwarding it to the workers"), std::string::npos) << err;
}

TEST(Launcher, RedirectsAndTeeWriteTorchrunLogLayout) {
  const fs::path dir = scratch_dir();
  const fs::path logs = dir / "logs";
  // stdout only to the files, stderr to the files and (prefixed) to the console.
  const LaunchResult run = run_launcher(
      dir, {"--nproc-per-node", "2", "--redirects", "1", "--tee", "2", "--log-dir", logs.string()},
      kWorker, {"--print"});
  ASSERT_EQ(run.code, 0) << run.err;
  for (int rank = 0; rank < 2; ++rank) {
    const fs::path folder = logs / "attempt_0" / std::to_string(rank);
    EXPECT_EQ(read_file(folder / "stdout.log"), "stdout of rank " + std::to_string(rank) + "\n");
    EXPECT_EQ(read_file(folder / "stderr.log"), "stderr of rank " + std::to_string(rank) + "\n");
    EXPECT_NE(run.err.find("[default" + std::to_string(rank) + "]:stderr of rank " +
                           std::to_string(rank) + "\n"),
              std::string::npos)
        << run.err;
  }
  EXPECT_EQ(run.out.find("stdout of rank"), std::string::npos) << run.out;
}

TEST(Launcher, PerRankRedirectsAndLocalRanksFilter) {
  const fs::path dir = scratch_dir();
  const fs::path logs = dir / "logs";
  // Rank 0: both streams to files only. Rank 1: console, but the filter shows only rank 0.
  const LaunchResult run = run_launcher(dir,
                                        {"--nproc-per-node", "2", "--redirects", "0:3", "--log-dir",
                                         logs.string(), "--local-ranks-filter", "0"},
                                        kWorker, {"--print"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(read_file(logs / "attempt_0" / "0" / "stdout.log"), "stdout of rank 0\n");
  EXPECT_FALSE(fs::exists(logs / "attempt_0" / "1" / "stdout.log"));
  EXPECT_EQ(run.out.find("of rank"), std::string::npos)
      << run.out;  // rank 1 hidden, rank 0 in files
  EXPECT_EQ(run.err.find("of rank"), std::string::npos) << run.err;

  // Without redirection the filtered rank's output reaches the console.
  const LaunchResult shown = run_launcher(
      dir, {"--nproc-per-node", "2", "--local-ranks-filter", "1"}, kWorker, {"--print"});
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_EQ(shown.out, "stdout of rank 1\n");
  EXPECT_NE(shown.err.find("stderr of rank 1"), std::string::npos);
  EXPECT_EQ(shown.err.find("stderr of rank 0"), std::string::npos);
}

TEST(Launcher, RejectsBadCommandLines) {
  const fs::path dir = scratch_dir();
  const auto check = [&](const std::vector<std::string>& args, const std::string& message) {
    std::vector<std::string> argv = {CTRAINER_RUN_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    const int code = wait_for(spawn_process(argv, dir / "out", dir / "err"));
    const std::string err = read_file(dir / "err");
    EXPECT_EQ(code, 2) << err;
    EXPECT_NE(err.find(message), std::string::npos) << err;
  };
  check({"--nnodes", "1:4", kWorker},
        "--nnodes 1:4: an elastic range needs the dynamic rendezvous");
  check({"-m", "train"}, "-m/--module");
  check({"--nproc-per-node", "2"}, "no program given");
  check({"--nproc-per-node", "two", kWorker}, "--nproc-per-node must be a positive integer");
  check({"--redirects", "5", kWorker}, "--redirects '5'");
  check({"--local-ranks-filter", "3", kWorker}, "--local-ranks-filter '3'");
  check({"--node-rank", "2", "--nnodes", "2", kWorker}, "--node-rank 2");
  check({"--rdzv-backend", "c10d", kWorker}, "--rdzv-backend c10d needs --rdzv-endpoint");
  check({"--bogus", kWorker}, "bogus");
  check({dir.string() + "/missing-program"}, "cannot execute");
}

TEST(Launcher, NoPythonIsAcceptedAndProgramArgumentsPassThrough) {
  const fs::path dir = scratch_dir();
  // Flags after the program belong to it, even ones ctrainer-run also knows.
  const LaunchResult run =
      run_launcher(dir, {"--no-python", "--"}, kWorker,
                   {"--out", dir.string(), "--fail-rank", "0", "--fail-code", "6"});
  EXPECT_EQ(run.code, 6) << run.err;
}

TEST(LauncherGloo, TwoRanksAllReduceThroughTheEnvironment) {
  const fs::path dir = scratch_dir();
  const LaunchResult run = run_launcher(dir, {"--standalone", "--nproc-per-node", "2"}, kGlooWorker,
                                        {"--timeout", "60"});
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("rank 0 of 2 (gloo): all-reduce 3 30, broadcast 1: OK"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("rank 1 of 2 (gloo): all-reduce 3 30, broadcast 1: OK"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("rank 0: all-gather OK"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("rank 1: all-gather OK"), std::string::npos) << run.out;
}

TEST(LauncherGloo, MissingPeerTimesOutNamingTheStoreAndTheCount) {
  const fs::path dir = scratch_dir();
  const int port = free_port();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  // Rank 0 of 2 alone: it hosts the store and waits for a rank that never comes.
  const auto start = Clock::now();
  const int code =
      wait_for(spawn_process({kGlooWorker, "--timeout", "2"}, dir / "out0", dir / "err0",
                             {{"RANK", "0"},
                              {"WORLD_SIZE", "2"},
                              {"MASTER_ADDR", "127.0.0.1"},
                              {"MASTER_PORT", std::to_string(port)}}));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string err = read_file(dir / "err0");
  EXPECT_EQ(code, 3) << err;
  EXPECT_LT(seconds, 20);
  EXPECT_NE(err.find("rendezvous at MASTER_ADDR:MASTER_PORT=" + address +
                     " timed out after 2 s: 1 of 2 ranks joined (world size 2)"),
            std::string::npos)
      << err;

  // Rank 1 alone: nobody hosts the store.
  const int client =
      wait_for(spawn_process({kGlooWorker, "--timeout", "2"}, dir / "out1", dir / "err1",
                             {{"RANK", "1"},
                              {"WORLD_SIZE", "2"},
                              {"MASTER_ADDR", "127.0.0.1"},
                              {"MASTER_PORT", std::to_string(port)}}));
  const std::string client_err = read_file(dir / "err1");
  EXPECT_EQ(client, 3) << client_err;
  EXPECT_NE(client_err.find("rank 1 could not reach the rendezvous store at "
                            "MASTER_ADDR:MASTER_PORT=" +
                            address + " within 2 s (world size 2)"),
            std::string::npos)
      << client_err;
}

// ctrainer-run's c10d rendezvous on one machine (the two-node version, with nodes that leave and
// join, is elastic_test.cpp, and needs root): two agents at the same endpoint form a world of two
// nodes, at once (MAX nodes), ranked by join order (same address): the first serves the store,
// the second finds the port taken and reaches it.
TEST(LauncherElastic, TwoAgentsOnOneMachineFormAWorldOfTwoNodes) {
  const fs::path dir = scratch_dir();
  const std::vector<std::string> agent = {CTRAINER_RUN_BINARY,
                                          "--nnodes",
                                          "1:2",
                                          "--rdzv-backend",
                                          "c10d",
                                          "--rdzv-endpoint",
                                          "127.0.0.1:" + std::to_string(free_port()),
                                          "--rdzv-id",
                                          "one_machine",
                                          "--rdzv-conf",
                                          "last_call_timeout=30",
                                          kGlooWorker,
                                          "--timeout",
                                          "60"};
  const pid_t first = spawn_process(agent, dir / "first.out", dir / "first.err");
  ASSERT_TRUE(wait_until_exists({dir / "first.err"}, 10));
  const auto joined = [&] {
    return read_file(dir / "first.err").find("joined round 0") != std::string::npos;
  };
  for (const auto deadline = Clock::now() + std::chrono::seconds(30);
       !joined() && Clock::now() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto start = Clock::now();
  const int second = wait_for(spawn_process(agent, dir / "second.out", dir / "second.err"));
  const int first_code = wait_for(first);
  const std::string first_err = read_file(dir / "first.err"),
                    second_err = read_file(dir / "second.err");
  ASSERT_EQ(first_code, 0) << first_err;
  ASSERT_EQ(second, 0) << second_err;
  // MAX nodes close the round at once, not after the 30 s last call.
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 25);
  EXPECT_NE(first_err.find("serving the rendezvous store"), std::string::npos) << first_err;
  EXPECT_NE(second_err.find("reaching it as a client instead"), std::string::npos) << second_err;
  EXPECT_NE(first_err.find("round 0: node 0 of 2, world size 2"), std::string::npos) << first_err;
  EXPECT_NE(second_err.find("round 0: node 1 of 2, world size 2"), std::string::npos) << second_err;
  EXPECT_NE(
      read_file(dir / "first.out").find("rank 0 of 2 (gloo): all-reduce 3 30, broadcast 1: OK"),
      std::string::npos);
  EXPECT_NE(
      read_file(dir / "second.out").find("rank 1 of 2 (gloo): all-reduce 3 30, broadcast 1: OK"),
      std::string::npos);
}

}  // namespace
