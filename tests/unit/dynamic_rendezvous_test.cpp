// ctrainer-run's dynamic rendezvous (launcher/elastic/dynamic_rendezvous.h) on an in-memory c10d
// HashStore, each node a thread: when a round closes (MAX nodes at once, MIN after the last call),
// the ranks by address and node 0's address for everyone, a node that arrives at a running
// round supersedes it, a full round is waited out, a finished job sends late nodes home, and a
// round that never fills is an error naming how many came.
// A round a new node asked for waits for the nodes it replaced (rejoin_window), not only for the
// last call.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <ctrainer/distributed/launcher/elastic/dynamic_rendezvous.h>

namespace ctrainer::launcher {
namespace dynamic_rendezvous_test {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

RendezvousSettings settings(int64_t min_nodes, int64_t max_nodes, milliseconds last_call,
                            const std::string& address) {
  RendezvousSettings s;
  s.run_id = "job";
  s.min_nodes = min_nodes;
  s.max_nodes = max_nodes;
  s.last_call = last_call;
  s.join_timeout = milliseconds(20000);
  s.node_address = address;
  s.poll_interval = milliseconds(5);
  s.rejoin_window = milliseconds(10000);
  return s;
}

/// A node of the job: joins with a port of its own for the workers' store.
std::optional<RoundAssignment> join(DynamicRendezvous& node, int port) {
  return node.join([port] { return port; }, [] { return false; });
}

TEST(DynamicRendezvous, MaxNodesCloseTheRoundAtOnceRankedByAddress) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  DynamicRendezvous a(store, settings(1, 2, milliseconds(60000), "10.0.0.1"));
  DynamicRendezvous b(store, settings(1, 2, milliseconds(60000), "10.0.0.2"));
  const auto start = Clock::now();
  auto first = std::async(std::launch::async, [&] { return join(b, 2222); });
  std::this_thread::sleep_for(milliseconds(50));  // b joins first, a's address comes first
  const auto assigned_a = join(a, 1111);
  const auto second = first.get();
  ASSERT_TRUE(assigned_a && second);
  EXPECT_LT(Clock::now() - start, milliseconds(10000));  // not the 60 s last call
  EXPECT_EQ(assigned_a->round, 0);
  EXPECT_EQ(second->round, 0);
  EXPECT_EQ(assigned_a->node_rank, 0);
  EXPECT_EQ(second->node_rank, 1);
  EXPECT_EQ(assigned_a->nnodes, 2);
  EXPECT_EQ(second->nnodes, 2);
  // Node 0's address and port, for both.
  for (const auto& assigned : {*assigned_a, *second}) {
    EXPECT_EQ(assigned.master_addr, "10.0.0.1");
    EXPECT_EQ(assigned.master_port, 1111);
  }
}

TEST(DynamicRendezvous, MinNodesCloseTheRoundAfterTheLastCall) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  DynamicRendezvous a(store, settings(1, 4, milliseconds(300), "10.0.0.1"));
  const auto start = Clock::now();
  const auto assigned = join(a, 1111);
  ASSERT_TRUE(assigned);
  EXPECT_GE(Clock::now() - start, milliseconds(300));
  EXPECT_EQ(assigned->nnodes, 1);
  EXPECT_EQ(assigned->node_rank, 0);
}

TEST(DynamicRendezvous, ANodeArrivingAtARunningRoundSupersedesIt) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  DynamicRendezvous a(store, settings(1, 2, milliseconds(100), "10.0.0.1"));
  DynamicRendezvous b(store, settings(1, 2, milliseconds(100), "10.0.0.2"));
  const auto alone = join(a, 1111);
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->nnodes, 1);
  EXPECT_FALSE(a.superseded(0));
  auto arriving = std::async(std::launch::async, [&] { return join(b, 2222); });
  const auto deadline = Clock::now() + milliseconds(10000);
  while (!a.superseded(0) && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(a.superseded(0));
  // a stops its workers (here: longer than the last call) and joins the next round, where b
  // waits for it.
  std::this_thread::sleep_for(milliseconds(500));
  const auto together = join(a, 1111);
  const auto b_assigned = arriving.get();
  ASSERT_TRUE(together && b_assigned);
  EXPECT_EQ(together->round, 1);
  EXPECT_EQ(together->nnodes, 2);
  EXPECT_EQ(together->node_rank, 0);
  EXPECT_EQ(b_assigned->node_rank, 1);
  EXPECT_EQ(b_assigned->master_addr, "10.0.0.1");
  EXPECT_EQ(b_assigned->master_port, 1111);
}

TEST(DynamicRendezvous, AFullRoundIsWaitedOutUntilAFailureSupersedesIt) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  DynamicRendezvous a(store, settings(1, 1, milliseconds(100), "10.0.0.1"));
  DynamicRendezvous b(store, settings(1, 1, milliseconds(100), "10.0.0.2"));
  const auto running = join(a, 1111);
  ASSERT_TRUE(running);
  auto waiting = std::async(std::launch::async, [&] { return join(b, 2222); });
  EXPECT_EQ(waiting.wait_for(milliseconds(300)), std::future_status::timeout);
  EXPECT_FALSE(a.superseded(0));  // waiting does not disturb a full round
  a.supersede(0);                 // a's worker failed
  const auto b_assigned = waiting.get();
  ASSERT_TRUE(b_assigned);
  EXPECT_EQ(b_assigned->round, 1);
  EXPECT_EQ(b_assigned->nnodes, 1);
}

TEST(DynamicRendezvous, AFinishedJobSendsLateNodesHome) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  DynamicRendezvous a(store, settings(1, 2, milliseconds(50), "10.0.0.1"));
  DynamicRendezvous b(store, settings(1, 2, milliseconds(50), "10.0.0.2"));
  const auto assigned = join(a, 1111);
  ASSERT_TRUE(assigned);
  a.finish(assigned->round);
  EXPECT_FALSE(join(b, 2222).has_value());
  a.await_everyone_finished(*assigned, milliseconds(1000));  // returns: 1 of 1 finished
}

TEST(DynamicRendezvous, ARoundThatNeverFillsIsAnErrorNamingWhoCame) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  RendezvousSettings few = settings(2, 3, milliseconds(50), "10.0.0.1");
  few.join_timeout = milliseconds(300);
  DynamicRendezvous a(store, few);
  try {
    join(a, 1111);
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("1 of at least 2 nodes joined round 0"),
              std::string::npos)
        << error.what();
  }
}

TEST(DynamicRendezvous, AStopRequestEndsTheWait) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  DynamicRendezvous a(store, settings(2, 2, milliseconds(50), "10.0.0.1"));
  EXPECT_FALSE(a.join([] { return 1; }, [] { return true; }).has_value());
}

}  // namespace dynamic_rendezvous_test
}  // namespace ctrainer::launcher
