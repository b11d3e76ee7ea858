// ctrainer-run's command line on SageMaker: the flags a user leaves out take the cluster's
// layout (SM_HOSTS, SM_CURRENT_HOST, SM_NUM_GPUS), as the training toolkit's own torchrun
// launch does; flags given explicitly win; outside SageMaker nothing changes.
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

}  // namespace launch_options_test
}  // namespace ctrainer::launcher
