#pragma once
/// \file Where this host is in a SageMaker training job. SageMaker's training toolkit describes
/// the cluster in environment variables: SM_HOSTS (a JSON list, ["algo-1","algo-2"]),
/// SM_CURRENT_HOST, and for heterogeneous clusters SM_CURRENT_INSTANCE_GROUP with its hosts
/// (SM_CURRENT_INSTANCE_GROUP_HOSTS, or the group's entry of SM_INSTANCE_GROUPS_DICT);
/// SM_NUM_GPUS counts this host's GPUs. The toolkit's own torchrun launch uses, as node rank,
/// the current host's index in the list and, as master address, the list's first host; so do
/// ctrainer-run's defaults and ProcessInfo. No torch here: ctrainer-run compiles this file in.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ctrainer {

/// The hosts that train together and this host's place among them.
struct SageMakerCluster {
  std::vector<std::string> hosts;  ///< in SageMaker's order; hosts.front() serves rank 0
  std::string current_host;        ///< SM_CURRENT_HOST
  int64_t node_rank = 0;           ///< index of current_host in hosts
  /// SM_CURRENT_INSTANCE_GROUP, when the hosts are that group's (heterogeneous clusters).
  std::optional<std::string> instance_group;
  std::optional<int64_t> num_gpus;  ///< SM_NUM_GPUS

  const std::string& master_addr() const { return hosts.front(); }
};

/// Looks an environment variable up; std::nullopt when unset or empty.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The cluster, or std::nullopt outside SageMaker (SM_HOSTS and SM_CURRENT_HOST unset). Throws
/// ArgumentError naming the variable when one is malformed, only one of the two is set, or the
/// current host is not among the hosts.
std::optional<SageMakerCluster> read_sagemaker_cluster(const EnvironmentLookup& lookup);

}  // namespace ctrainer
