// Multi-node for real: two simulated nodes of 2 processes each, every node a Linux network
// namespace the test creates (tests/support/network_namespaces.h: ip netns + a veth pair,
// 10.77.K.1 <-> 10.77.K.2), launched by ctrainer-run's static multi-node rendezvous, by the
// torch wheel's torchrun with its c10d rendezvous, and by accelerate launch with a two-machine
// config file. The nodes share the file system and PIDs but
// not the network: node 1 reaches node 0 only through the veth, as it would reach another host.
// Each job trains the tiny MRPC workload (tests/support/tiny_mrpc.h, 2 epochs = 6 steps of 4 x 8)
// and is compared with one node of 4 processes on loopback (ctrainer-run --standalone):
//   - DDP and FULL_SHARD on two nodes train bitwise what one node trains: the same 4 ranks read the
//     same batches and Gloo reduces them in the same order, whatever network carries the bytes.
//   - HYBRID_SHARD (shard inside a node, replicate across nodes) on two nodes trains what
//     FULL_SHARD trains on one, within 1e-5: the same sums, only reduced in another order.
// Skipped, with the reason, where namespaces cannot be created (no root / CAP_NET_ADMIN, no
// iproute2). The namespaces, and anything still running inside them, are removed in TearDown.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "support/network_namespaces.h"
#include "support/process.h"
#include "support/safetensors_compare.h"
#include "support/tiny_mrpc.h"

namespace {

namespace fs = std::filesystem;
using ctrainer::testing::JobResult;
using ctrainer::testing::logged_losses;
using ctrainer::testing::read_binary_file;
using ctrainer::testing::read_json_if_exists;
using Args = std::vector<std::string>;
using Clock = std::chrono::steady_clock;

enum class Launcher { kCtrainerRun, kTorchrun, kAccelerate };

std::string launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::kCtrainerRun:
      return "ctrainer_run";
    case Launcher::kTorchrun:
      return "torchrun";
    case Launcher::kAccelerate:
      return "accelerate";
  }
  return "";
}

/// GoogleTest prints the parameter with this (ctest's test names end with it).
void PrintTo(Launcher launcher, std::ostream* out) {
  *out << launcher_name(launcher);
}

/// The rendezvous port on node 0: the namespaces are fresh, so nothing else can hold it.
constexpr int kPort = 29500;
/// A two-node job that has not ended by then is killed and fails the test (ctest's TIMEOUT would
/// kill the test itself, leaving the namespaces behind). The job takes a few seconds.
constexpr auto kJobDeadline = std::chrono::seconds(150);
/// Keeps a failed rendezvous from waiting 30 minutes (the default) before it reports.
const Args kDdpTimeout = {"--ddp_timeout", "60"};
/// transformers' FSDP1 spelling: hybrid_shard exists only with "version": 1.
constexpr const char* kFsdpConfig =
    R"({"version": 1, "transformer_layer_cls_to_wrap": ["BertLayer"]})";

/// Letters, digits and '_' only: the test name becomes part of namespace names.
std::string file_name_safe(std::string text) {
  for (char& c : text)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return text;
}

class MultiNode : public ::testing::TestWithParam<Launcher> {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string name = file_name_safe(test->name());
    dir_ = fs::temp_directory_path() /
           ("ctrainer_multinode_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Names unique per test and process. Each pair of namespaces is a closed network of its
    // own, so overlapping subnets could not meet; a subnet per test keeps logs unambiguous.
    const int subnet =
        10 + static_cast<int>(std::hash<std::string>{}(name + std::to_string(::getpid())) % 240);
    const std::string problem =
        nodes_.create("ctr" + std::to_string(::getpid()) + "_" + name, subnet);
    if (!problem.empty())
      GTEST_SKIP() << "cannot simulate two nodes with network namespaces here: " << problem;
    ctrainer::testing::write_tiny_mrpc(dir_, CTRAINER_EXAMPLES_DATA_DIR);
    std::ofstream(dir_ / "fsdp.json") << kFsdpConfig;
    std::ofstream(dir_ / "accelerate_two_machines.yaml")
        << "compute_environment: LOCAL_MACHINE\ndebug: false\ndistributed_type: MULTI_GPU\n"
           "downcast_bf16: 'no'\ngpu_ids: all\nmachine_rank: 0\nmain_process_ip: "
        << nodes_.node(0).address << "\nmain_process_port: " << kPort
        << "\nmain_training_function: main\nmixed_precision: 'no'\nnum_machines: 2\n"
           "num_processes: 4\nrdzv_backend: static\nsame_network: true\ntpu_env: []\n"
           "tpu_use_cluster: false\ntpu_use_sudo: false\nuse_cpu: false\n";
  }

  void TearDown() override {
    nodes_.destroy();  // SIGKILLs what still runs inside, then deletes the namespaces
    for (const pid_t pid : running_)
      if (!ctrainer::testing::wait_for(pid, std::chrono::seconds(10))) {
        ::kill(pid, SIGKILL);
        ctrainer::testing::wait_for(pid);
      }
    running_.clear();
    if (!HasFailure()) fs::remove_all(dir_);  // kept for a look when something failed
  }

  Args flags(const std::string& out, const Args& extra = {}) const {
    Args all = ctrainer::testing::tiny_mrpc_flags(dir_, CTRAINER_EXAMPLES_DATA_DIR, out, 2);
    all.insert(all.end(), kDdpTimeout.begin(), kDdpTimeout.end());
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  }

  Args fsdp(const std::string& strategy) const {
    return {"--fsdp", strategy + " auto_wrap", "--fsdp_config", (dir_ / "fsdp.json").string()};
  }

  /// The reference: one node of 4 processes on loopback.
  JobResult one_node(const std::string& out, const Args& extra = {}) const {
    Args argv = {CTRAINER_RUN_BINARY, "--standalone", "--nproc-per-node", "4",
                 CTRAINER_RUN_GLUE_BINARY};
    const Args program = flags(out, extra);
    argv.insert(argv.end(), program.begin(), program.end());
    return ctrainer::testing::run_job(argv, dir_ / (out + ".log"));
  }

  /// How `launcher` starts node `i` of 2 (2 processes each) with node 0 as the rendezvous host.
  Args launch_node(Launcher launcher, int i) const {
    const std::string host = nodes_.node(0).address;
    if (launcher == Launcher::kCtrainerRun)
      return {CTRAINER_RUN_BINARY,
              "--nnodes",
              "2",
              "--node-rank",
              std::to_string(i),
              "--nproc-per-node",
              "2",
              "--master-addr",
              host,
              "--master-port",
              std::to_string(kPort)};
    // accelerate launch with the file `accelerate config` writes for two machines of 2 GPU
    // processes (on a machine without GPUs the processes train on the CPU with Gloo): accelerate
    // runs torchrun with the file's static rendezvous at main_process_ip:main_process_port;
    // each machine passes its --machine_rank, as the docs' two-machine example does.
    if (launcher == Launcher::kAccelerate)
      return {CTRAINER_PYTHON,
              CTRAINER_ACCELERATE,
              "launch",
              "--config_file",
              (dir_ / "accelerate_two_machines.yaml").string(),
              "--machine_rank",
              std::to_string(i),
              "--no_python"};
    // torchrun's c10d rendezvous, as on a cluster, with two things a namespace needs:
    //  - --rdzv-conf is_host: an agent hosts the rendezvous store when the endpoint's host names
    //    this machine, judged from the host name and the addresses it resolves to. Both
    //    namespaces share the host name, which resolves to an address neither has, so no agent
    //    would host it and both would wait for the store; say which one does.
    //  - --local-addr: the rendezvous' rank-0 agent also serves the workers' store
    //    (TORCHELASTIC_USE_AGENT_STORE=True) and gives its workers MASTER_ADDR = its --local-addr,
    //    by default socket.getfqdn(), which inside a namespace is "localhost": node 1's ranks
    //    would look for the store on their own loopback. With --local-addr, MASTER_ADDR is node
    //    0's veth address and MASTER_PORT a free port of that agent (not the rendezvous port).
    //    It also decides the agents' order (sorted by address): node 0 gets ranks 0 and 1.
    return {CTRAINER_PYTHON,    CTRAINER_TORCHRUN,
            "--nnodes",         "2",
            "--nproc-per-node", "2",
            "--rdzv-backend",   "c10d",
            "--rdzv-endpoint",  host + ":" + std::to_string(kPort),
            "--rdzv-id",        "ctrainer_multinode_" + std::to_string(::getpid()),
            "--rdzv-conf",      i == 0 ? "is_host=1" : "is_host=0",
            "--local-addr",     nodes_.node(i).address,
            "--no-python"};
  }

  /// The job on two nodes, started together; waits for both. When one node fails, the other is
  /// stopped at once (its ranks would wait for the lost peers until --ddp_timeout), as a cluster
  /// scheduler stops a job; at kJobDeadline both are.
  std::array<JobResult, 2> two_nodes(Launcher launcher, const std::string& out,
                                     const Args& extra = {}) {
    const auto start = Clock::now();
    std::array<pid_t, 2> pids{};
    std::array<fs::path, 2> logs;
    for (int i = 0; i < 2; ++i) {
      Args argv = nodes_.exec_prefix(i);
      const Args launch = launch_node(launcher, i);
      argv.insert(argv.end(), launch.begin(), launch.end());
      argv.push_back(CTRAINER_RUN_GLUE_BINARY);
      const Args program = flags(out, extra);
      argv.insert(argv.end(), program.begin(), program.end());
      logs[i] = dir_ / (out + ".node" + std::to_string(i) + ".log");
      // Gloo binds where GLOO_SOCKET_IFNAME says. Without it, it takes the address the host
      // name resolves to, which is not on this namespace's veth (here: 127.0.0.1, so the other
      // node's ranks would connect to their own loopback).
      pids[i] = ctrainer::testing::spawn_process(
          argv, logs[i], logs[i], {{"GLOO_SOCKET_IFNAME", nodes_.node(i).interface}});
      running_.push_back(pids[i]);
    }
    std::array<JobResult, 2> jobs;
    std::array<bool, 2> ended{false, false};
    std::string note;
    while (!ended[0] || !ended[1]) {
      for (int i = 0; i < 2; ++i) {
        if (ended[i]) continue;
        const auto code = ctrainer::testing::wait_for(pids[i], std::chrono::milliseconds(0));
        if (!code) continue;
        ended[i] = true;
        jobs[i].exit_code = *code;
        jobs[i].seconds = std::chrono::duration<double>(Clock::now() - start).count();
        running_.erase(std::find(running_.begin(), running_.end(), pids[i]));
        if (*code != 0 && !ended[1 - i]) {
          note = "\n[test] node " + std::to_string(i) + " failed: node " + std::to_string(1 - i) +
                 " was killed\n";
          nodes_.kill_processes(1 - i);
        }
      }
      if (Clock::now() - start > kJobDeadline) {
        note = "\n[test] the job ran past " + std::to_string(kJobDeadline.count()) + " s: killed\n";
        nodes_.kill_processes(0);
        nodes_.kill_processes(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (int i = 0; i < 2; ++i) {
      jobs[i].output = read_binary_file(logs[i]) + note;
      std::printf("%s: exit %d after %.1f s\n", logs[i].filename().c_str(), jobs[i].exit_code,
                  jobs[i].seconds);
    }
    return jobs;
  }

  /// Both nodes succeeded, and node 1's first rank found node 0's store through the veth:
  /// MASTER_ADDR was node 0's address. Each node's log is its own ranks': node 1's main process
  /// (rank 2; log_on_each_node) logs at info from its first line, its replica (rank 3) does not.
  void expect_two_nodes_ran(const std::array<JobResult, 2>& nodes) const {
    for (int i = 0; i < 2; ++i) ASSERT_EQ(nodes[i].exit_code, 0) << nodes[i].output;
    const std::string& node1 = nodes[1].output;
    EXPECT_NE(node1.find("[rank 2] [info] Training a new model from scratch"), std::string::npos)
        << node1;
    EXPECT_NE(node1.find("rank 2 of 4 (torchrun): joining the gloo process group at " +
                         nodes_.node(0).address + ":"),
              std::string::npos)
        << node1;
    for (const char* other : {"[rank 0]", "[rank 1]", "[rank 3] [info]"})
      EXPECT_EQ(node1.find(other), std::string::npos) << other << " in node 1's log:\n" << node1;
  }

  /// Two runs trained the same model, bit for bit: weights (final and at the step-3 checkpoint),
  /// logged losses and eval metrics.
  void expect_bitwise_same_training(const std::string& reference, const std::string& run) const {
    const fs::path a = dir_ / reference, b = dir_ / run;
    const std::string weights = read_binary_file(a / "model.safetensors");
    ASSERT_GT(weights.size(), 1000u);
    EXPECT_TRUE(read_binary_file(b / "model.safetensors") == weights)
        << "model.safetensors differs between one node and two";
    EXPECT_TRUE(read_binary_file(b / "checkpoint-3" / "model.safetensors") ==
                read_binary_file(a / "checkpoint-3" / "model.safetensors"));
    const auto losses = logged_losses(a);
    ASSERT_EQ(losses.size(), 3u);  // steps 2, 4, 6
    EXPECT_EQ(logged_losses(b), losses);
    const auto eval_a = read_json_if_exists(a / "eval_results.json"),
               eval_b = read_json_if_exists(b / "eval_results.json");
    ASSERT_FALSE(eval_b.is_null());
    for (const char* metric : {"eval_loss", "eval_accuracy", "eval_f1", "eval_samples"})
      EXPECT_EQ(eval_b.at(metric), eval_a.at(metric)) << metric;
    // Four ranks saved their RNG states: the job had the world size of the reference.
    EXPECT_TRUE(fs::exists(b / "checkpoint-3" / "rng_state_3.json"));
  }

  fs::path dir_;
  ctrainer::testing::SimulatedNodes nodes_;
  std::vector<pid_t> running_;  ///< started and not reaped yet (TearDown reaps them)
};

// ---- DDP ------------------------------------------------------------------------------------

TEST_P(MultiNode, DdpOnTwoNodesTrainsBitwiseWhatOneNodeTrains) {
  const JobResult reference = one_node("one_node");
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  const auto nodes = two_nodes(GetParam(), "two_nodes");
  expect_two_nodes_ran(nodes);
  if (HasFatalFailure()) return;
  expect_bitwise_same_training("one_node", "two_nodes");
}

// ---- sharded ----------------------------------------------------------------------------------

TEST_P(MultiNode, FullShardOnTwoNodesTrainsBitwiseWhatOneNodeTrains) {
  // The sharded collectives (all-gather, reduce-scatter) across the veth; and the harness of the
  // HYBRID_SHARD test below, with the one strategy that differs.
  const JobResult reference = one_node("one_node", fsdp("full_shard"));
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  const auto nodes = two_nodes(GetParam(), "two_nodes", fsdp("full_shard"));
  expect_two_nodes_ran(nodes);
  if (HasFatalFailure()) return;
  EXPECT_NE(nodes[0].output.find("FSDP FULL_SHARD"), std::string::npos) << nodes[0].output;
  expect_bitwise_same_training("one_node", "two_nodes");
}

TEST_P(MultiNode, HybridShardOnTwoNodesTrainsWhatFullShardOnOneNodeTrains) {
  // HYBRID_SHARD shards each parameter over the 2 ranks of a node and replicates the shards
  // across the nodes: gradients are reduce-scattered inside a node, then all-reduced between
  // the nodes' corresponding shards. FULL_SHARD reduce-scatters over all 4 ranks at once. The
  // sums are the same and only their order differs, hence a tolerance instead of bitwise.
  const JobResult reference = one_node("one_node", fsdp("full_shard"));
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  const auto nodes = two_nodes(GetParam(), "two_nodes", fsdp("hybrid_shard"));
  expect_two_nodes_ran(nodes);
  if (HasFatalFailure()) return;
  EXPECT_NE(nodes[0].output.find("replicated across nodes (HYBRID_SHARD)"), std::string::npos)
      << nodes[0].output;
  // Node 0's ranks wrote the shards, as 2 (the ranks of a node), not 4.
  EXPECT_TRUE(fs::exists(dir_ / "two_nodes" / "checkpoint-3" / "zero" / "rank_1.safetensors"));
  EXPECT_FALSE(fs::exists(dir_ / "two_nodes" / "checkpoint-3" / "zero" / "rank_2.safetensors"));

  ctrainer::testing::expect_tensors_near(dir_ / "one_node" / "model.safetensors",
                                         dir_ / "two_nodes" / "model.safetensors", 1e-5);
  const auto losses = logged_losses(dir_ / "one_node");
  const auto hybrid_losses = logged_losses(dir_ / "two_nodes");
  ASSERT_EQ(losses.size(), 3u);
  ASSERT_EQ(hybrid_losses.size(), losses.size());
  for (size_t i = 0; i < losses.size(); ++i)
    EXPECT_NEAR(hybrid_losses[i], losses[i], 1e-5) << "logged loss " << i;
  const auto eval_a = read_json_if_exists(dir_ / "one_node" / "eval_results.json");
  const auto eval_b = read_json_if_exists(dir_ / "two_nodes" / "eval_results.json");
  ASSERT_FALSE(eval_b.is_null());
  EXPECT_NEAR(eval_b.at("eval_loss").get<double>(), eval_a.at("eval_loss").get<double>(), 1e-5);
  EXPECT_EQ(eval_b.at("eval_samples"), eval_a.at("eval_samples"));
  EXPECT_TRUE(fs::exists(dir_ / "two_nodes" / "checkpoint-3" / "rng_state_3.json"));
}

// ctest names: multinode/MultiNode.<test>/<launcher> (`ctest -R multinode`).
INSTANTIATE_TEST_SUITE_P(multinode, MultiNode,
                         ::testing::Values(Launcher::kCtrainerRun, Launcher::kTorchrun,
                                           Launcher::kAccelerate),
                         [](const ::testing::TestParamInfo<Launcher>& info) {
                           return launcher_name(info.param);
                         });

}  // namespace
