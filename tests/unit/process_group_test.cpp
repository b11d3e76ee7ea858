// ProcessGroup's rendezvous against a store served by someone else, as torchrun's elastic agent
// serves it (TORCHELASTIC_USE_AGENT_STORE=True): rank 0 joins as a client, and because that store
// outlives the workers, each attempt (TORCHELASTIC_RESTART_COUNT) keeps its keys under its own
// prefix. The test plays the agent: it serves a c10d TCPStore and runs the ranks as threads.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <future>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <ctrainer/distributed/process_group.h>
#include <ctrainer/distributed/process_info.h>

namespace ctrainer {
namespace process_group_test {

/// A TCP store on a free loopback port, like the one torchrun's agent serves for its workers.
c10::intrusive_ptr<c10d::TCPStore> serve_agent_store() {
  c10d::TCPStoreOptions options;
  options.port = 0;  // any free port; read back with getPort()
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = std::chrono::seconds(30);
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
}

ProcessInfo torchrun_rank(int64_t rank, int64_t world_size, int port, int64_t restart_count) {
  ProcessInfo info;
  info.rank = info.local_rank = rank;
  info.world_size = info.local_world_size = world_size;
  info.master_addr = "127.0.0.1";
  info.master_port = port;
  info.restart_count = restart_count;
  info.use_agent_store = true;
  info.launched_by = LaunchEnvironment::kTorchrun;
  return info;
}

int64_t counter(c10d::Store& store, const std::string& key) {
  return store.add(key, 0);
}

/// One attempt of a `world_size`-rank job on the agent's store: every rank (a thread) builds
/// the group, all-reduces rank + 1 and gathers a string; returns each rank's sum.
std::vector<double> run_attempt(int port, int64_t world_size, int64_t restart_count) {
  std::vector<std::future<double>> ranks;
  for (int64_t rank = 0; rank < world_size; ++rank)
    ranks.push_back(std::async(std::launch::async, [=] {
      ProcessGroupOptions options;
      options.timeout = std::chrono::seconds(20);
      ProcessGroup group(torchrun_rank(rank, world_size, port, restart_count), options);
      at::Tensor value = at::full({1}, static_cast<double>(rank + 1), at::kDouble);
      group.all_reduce(value);
      const auto names = group.all_gather_strings("attempt " + std::to_string(restart_count));
      for (const auto& name : names)
        if (name != "attempt " + std::to_string(restart_count))
          throw std::runtime_error("rank " + std::to_string(rank) + " read '" + name +
                                   "', a key of another attempt");
      group.shutdown();
      return value.item<double>();
    }));
  std::vector<double> sums;
  for (auto& rank : ranks) sums.push_back(rank.get());
  return sums;
}

TEST(AgentStore, RankZeroJoinsTheAgentsStoreAsAClient) {
  // Had rank 0 tried to serve, binding the agent's port would have failed.
  auto agent = serve_agent_store();
  ProcessGroupOptions options;
  options.timeout = std::chrono::seconds(20);
  ProcessGroup group(torchrun_rank(0, 1, agent->getPort(), 0), options);
  at::Tensor value = at::full({2}, 1.5, at::kDouble);
  group.all_reduce(value);
  EXPECT_EQ(value[0].item<double>(), 1.5);
  group.shutdown();
  // The rendezvous went through the agent's store, under the attempt's prefix.
  EXPECT_EQ(counter(*agent, "/worker/attempt_0/ctrainer/rendezvous/joined"), 1);
}

TEST(AgentStore, ARestartedAttemptDoesNotReadTheKeysOfTheOneBefore) {
  // Two attempts of a 2-rank job on one store, as torchrun restarts its workers: the second
  // must not read the first's keys (Gloo would connect to the old, closed addresses; the
  // rendezvous count would already be complete; gathered strings would be stale).
  auto agent = serve_agent_store();
  const int port = agent->getPort();
  EXPECT_EQ(run_attempt(port, 2, 0), (std::vector<double>{3, 3}));
  EXPECT_EQ(run_attempt(port, 2, 1), (std::vector<double>{3, 3}));
  EXPECT_EQ(counter(*agent, "/worker/attempt_0/ctrainer/rendezvous/joined"), 2);
  EXPECT_EQ(counter(*agent, "/worker/attempt_1/ctrainer/rendezvous/joined"), 2);
}

TEST(AgentStore, NoAgentStoreNamesTheLauncherAndTheAddress) {
  // TORCHELASTIC_USE_AGENT_STORE=True but nothing listens: rank 0 does not start a store of
  // its own; it reports whom it expected.
  int port = 0;
  {
    auto closed = serve_agent_store();  // a port that was free a moment ago
    port = closed->getPort();
  }
  ProcessGroupOptions options;
  options.timeout = std::chrono::seconds(2);
  try {
    ProcessGroup group(torchrun_rank(0, 2, port, 0), options);
    ADD_FAILURE() << "no error without an agent store";
  } catch (const DistributedError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("rank 0 could not reach the rendezvous store at "
                           "MASTER_ADDR:MASTER_PORT=127.0.0.1:" +
                           std::to_string(port)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("The launcher's agent (TORCHELASTIC_USE_AGENT_STORE=True) hosts the "
                           "store"),
              std::string::npos)
        << message;
  }
}

// HYBRID_SHARD's groups: 4 ranks as 2 nodes of 2. Each rank makes its node's subgroup, then the
// subgroup of the ranks with its local rank on every node; a sum over each touches its members
// only, a repeated request returns the same group, and malformed member lists are refused.
TEST(Subgroup, CollectivesStayInsideTheMembers) {
  auto agent = serve_agent_store();
  const int port = agent->getPort();
  struct Sums {
    double node, replica;
  };
  std::vector<std::future<Sums>> ranks;
  for (int64_t rank = 0; rank < 4; ++rank)
    ranks.push_back(std::async(std::launch::async, [=] {
      ProcessGroupOptions options;
      options.timeout = std::chrono::seconds(20);
      ProcessGroup group(torchrun_rank(rank, 4, port, 0), options);
      const int64_t node = rank / 2, local = rank % 2;
      ProcessGroup& node_group = group.subgroup({node * 2, node * 2 + 1});
      ProcessGroup& replicas = group.subgroup({local, local + 2});
      if (&group.subgroup({node * 2, node * 2 + 1}) != &node_group)
        throw std::runtime_error("a second request made another group");
      if (node_group.rank() != local || replicas.rank() != node || replicas.world_size() != 2)
        throw std::runtime_error("wrong rank or size in a subgroup");
      at::Tensor a = at::full({1}, static_cast<double>(rank + 1), at::kDouble);
      at::Tensor b = a.clone();
      node_group.all_reduce(a);
      replicas.all_reduce(b);
      group.shutdown();  // shuts the subgroups down first
      return Sums{a.item<double>(), b.item<double>()};
    }));
  std::vector<double> node_sums, replica_sums;
  for (auto& rank : ranks) {
    const Sums sums = rank.get();
    node_sums.push_back(sums.node);
    replica_sums.push_back(sums.replica);
  }
  EXPECT_EQ(node_sums, (std::vector<double>{3, 3, 7, 7}));
  EXPECT_EQ(replica_sums, (std::vector<double>{4, 6, 4, 6}));
}

TEST(Subgroup, MalformedMembersAreRefused) {
  auto agent = serve_agent_store();
  ProcessGroupOptions options;
  options.timeout = std::chrono::seconds(20);
  ProcessGroup group(torchrun_rank(0, 1, agent->getPort(), 0), options);
  for (const std::vector<int64_t>& members :
       {std::vector<int64_t>{}, std::vector<int64_t>{0, 0}, std::vector<int64_t>{1}}) {
    try {
      group.subgroup(members);
      ADD_FAILURE() << "accepted " << members.size() << " members";
    } catch (const std::exception& error) {
      EXPECT_NE(std::string(error.what()).find("process subgroup"), std::string::npos)
          << error.what();
    }
  }
  EXPECT_EQ(group.subgroup({0}).world_size(), 1);
  group.shutdown();
}

}  // namespace process_group_test
}  // namespace ctrainer

namespace ctrainer {
namespace process_group_test {

void on_sigpipe(int) {}

// A rank killed mid-collective closed its sockets; the next Gloo write to it must fail the
// collective with an error, not kill this rank with SIGPIPE (exit 141, seen in
// ShardedFailure.TheOtherRanksExitWithinTheTimeout/zero1_kill).
TEST(BrokenPipes, AProcessGroupIgnoresSigpipeAndKeepsAProgramsOwnHandler) {
  struct sigaction disposition {};
  disposition.sa_handler = SIG_DFL;
  ::sigemptyset(&disposition.sa_mask);
  ASSERT_EQ(::sigaction(SIGPIPE, &disposition, nullptr), 0);
  {
    auto agent = serve_agent_store();
    ProcessGroupOptions options;
    options.timeout = std::chrono::seconds(20);
    ProcessGroup group(torchrun_rank(0, 1, agent->getPort(), 0), options);
  }
  struct sigaction now {};
  ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  EXPECT_EQ(::write(fds[1], "x", 1), -1);  // alive: the write fails with EPIPE instead
  EXPECT_EQ(errno, EPIPE);
  ::close(fds[1]);

  disposition.sa_handler = on_sigpipe;
  ASSERT_EQ(::sigaction(SIGPIPE, &disposition, nullptr), 0);
  ignore_broken_pipes();
  ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, &on_sigpipe);
}

}  // namespace process_group_test
}  // namespace ctrainer
