// ctrainer-run's command line on SageMaker: the flags a user leaves out take the cluster's
// layout (SM_HOSTS, SM_CURRENT_HOST, SM_NUM_GPUS), as the training toolkit's own torchrun
// launch does; flags given explicitly win; outside SageMaker nothing changes. And the elastic
// job's flags (--nnodes MIN:MAX, --rdzv-backend c10d, --rdzv-conf, --local-addr).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <ctrainer/distributed/launcher/launch_options.h>

#include "support/expect_error.h"

namespace ctrainer::launcher {
namespace launch_options_test {

using Environment = std::map<std::string, std::string>;

LaunchOptions parse(const std::vector<std::string>& arguments, const Environment& environment) {
  const auto parsed = parse_launch_command_line(
      arguments, [&](const std::string& name) -> std::optional<std::string> {
        const auto it = environment.find(name);
        if (it == environment.end()) return std::nullopt;
        return it->second;
      });
  EXPECT_TRUE(parsed.options.has_value());
  return parsed.options.value_or(LaunchOptions{});
}

const Environment kTwoHosts = {
    {"SM_HOSTS", R"(["algo-1","algo-2"])"}, {"SM_CURRENT_HOST", "algo-2"}, {"SM_NUM_GPUS", "4"}};

TEST(LaunchOptionsSageMaker, DefaultsComeFromTheCluster) {
  const LaunchOptions options = parse({"run_glue", "--do_train"}, kTwoHosts);
  EXPECT_EQ(options.nnodes, 2);
  EXPECT_EQ(options.node_rank, 1);
  EXPECT_EQ(options.master_addr, "algo-1");
  EXPECT_EQ(options.nproc_per_node, 4);
  EXPECT_EQ(options.world_size(), 8);
  EXPECT_EQ(options.command, (std::vector<std::string>{"run_glue", "--do_train"}));
}

TEST(LaunchOptionsSageMaker, ExplicitFlagsWin) {
  const LaunchOptions options = parse({"--nproc-per-node", "1", "--master-addr", "10.0.0.9",
                                       "--nnodes", "3", "--node-rank", "2", "prog"},
                                      kTwoHosts);
  EXPECT_EQ(options.nnodes, 3);
  EXPECT_EQ(options.node_rank, 2);
  EXPECT_EQ(options.master_addr, "10.0.0.9");
  EXPECT_EQ(options.nproc_per_node, 1);
  // --standalone stays one node on this host.
  const LaunchOptions standalone = parse({"--standalone", "prog"}, kTwoHosts);
  EXPECT_EQ(standalone.nnodes, 1);
  EXPECT_EQ(standalone.master_addr, "127.0.0.1");
}

TEST(LaunchOptionsSageMaker, CpuHostsAndNoSageMakerKeepTorchrunsDefaults) {
  Environment cpu = kTwoHosts;
  cpu["SM_NUM_GPUS"] = "0";
  EXPECT_EQ(parse({"prog"}, cpu).nproc_per_node, 1);
  const LaunchOptions plain = parse({"prog"}, {});
  EXPECT_EQ(plain.nnodes, 1);
  EXPECT_EQ(plain.node_rank, 0);
  EXPECT_EQ(plain.master_addr, "127.0.0.1");
}

TEST(LaunchOptionsSageMaker, AMalformedLayoutIsAnError) {
  ctrainer::testing::expect_error(
      [] {
        parse({"prog"}, {{"SM_HOSTS", "algo-1"}, {"SM_CURRENT_HOST", "algo-1"}});
      },
      {"SM_HOSTS='algo-1'"});
}

TEST(LaunchOptionsElastic, C10dReadsTheRangeTheEndpointAndTheConf) {
  const LaunchOptions options =
      parse({"--nnodes", "1:4", "--rdzv_backend", "c10d", "--rdzv-endpoint", "10.0.0.1",
             "--rdzv-id", "job42", "--rdzv-conf", "is_host=0,last_call_timeout=2.5,join_timeout=60",
             "--local-addr", "10.0.0.7", "prog"},
            {});
  EXPECT_TRUE(options.elastic());
  EXPECT_EQ(options.min_nodes, 1);
  EXPECT_EQ(options.max_nodes, 4);
  EXPECT_EQ(options.nnodes, 4);
  EXPECT_EQ(options.master_addr, "10.0.0.1");
  EXPECT_EQ(options.master_port, 29400);  // torchrun's c10d port when the endpoint has none
  EXPECT_EQ(options.run_id, "job42");
  EXPECT_EQ(options.rdzv_is_host, false);
  EXPECT_EQ(options.rdzv_last_call_timeout_s, 2.5);
  EXPECT_EQ(options.rdzv_join_timeout_s, 60);
  EXPECT_EQ(options.local_addr, "10.0.0.7");
  // A fixed count on c10d is a job of exactly that many nodes.
  const LaunchOptions fixed = parse({"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                                     "h:1234", "--rdzv-id", "j", "prog"},
                                    {});
  EXPECT_EQ(fixed.min_nodes, 2);
  EXPECT_EQ(fixed.max_nodes, 2);
  EXPECT_EQ(fixed.master_port, 1234);
  EXPECT_FALSE(parse({"--nnodes", "3", "prog"}, {}).elastic());
}

TEST(LaunchOptionsElastic, WhatTheC10dRendezvousCannotUseIsRefused) {
  using ctrainer::testing::expect_error;
  const std::vector<std::string> c10d = {"--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1",
                                         "--rdzv-id",      "j"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> all = c10d;
    all.insert(all.end(), extra.begin(), extra.end());
    all.push_back("prog");
    return all;
  };
  expect_error(
      [] {
        parse({"--nnodes", "1:4", "prog"}, {});
      },
      {"--nnodes 1:4", "add --rdzv-backend c10d"});
  expect_error([&] { parse(with({"--nnodes", "4:1"}), {}); }, {"MIN is larger than MAX"});
  expect_error([] { parse({"--rdzv-backend", "c10d", "prog"}, {}); }, {"needs --rdzv-endpoint"});
  expect_error(
      [] {
        parse({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "prog"}, {});
      },
      {"needs --rdzv-id"});
  expect_error([&] { parse(with({"--node-rank", "1"}), {}); }, {"node ranks come from"});
  expect_error(
      [&] {
        parse(with({"--rdzv-conf", "timeout=3"}), {});
      },
      {"--rdzv-conf timeout: unknown key", "is_host, last_call_timeout and join_timeout"});
  expect_error(
      [&] {
        parse(with({"--rdzv-conf", "keep_alive_interval=1"}), {});
      },
      {"keep no heartbeats"});
  expect_error([&] { parse(with({"--rdzv-conf", "is_host=maybe"}), {}); }, {"use 1 or 0"});
  expect_error(
      [&] {
        parse(with({"--rdzv-conf", "join_timeout=-1"}), {});
      },
      {"join_timeout=-1: must be a number of seconds > 0"});
  expect_error([&] { parse(with({"--rdzv-conf", "is_host"}), {}); }, {"is not key=value"});
  expect_error(
      [] {
        parse({"--rdzv-conf", "is_host=1", "prog"}, {});
      },
      {"--rdzv-conf is read by the c10d rendezvous"});
  expect_error(
      [] {
        parse({"--local-addr", "10.0.0.1", "prog"}, {});
      },
      {"--local-addr is read by the c10d rendezvous"});
  expect_error([] { parse({"--rdzv-backend", "etcd", "prog"}, {}); }, {"rdzv-backend etcd"});
}

}  // namespace launch_options_test
}  // namespace ctrainer::launcher
