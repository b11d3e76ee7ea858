#include <ctrainer/distributed/sagemaker_cluster.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

constexpr const char* kOutside = "; unset it when not running on SageMaker";

/// A JSON list of distinct, non-empty host names, as SageMaker writes SM_HOSTS.
std::vector<std::string> parse_host_list(const std::string& name, const nlohmann::json& value,
                                         const std::string& raw) {
  const std::string shape = name + "='" + raw +
                            "' is not a JSON list of host names (SageMaker writes "
                            "[\"algo-1\",\"algo-2\"])" +
                            kOutside;
  if (!value.is_array() || value.empty()) throw ArgumentError(shape);
  std::vector<std::string> hosts;
  std::set<std::string> seen;
  for (const auto& host : value) {
    if (!host.is_string() || host.get<std::string>().empty()) throw ArgumentError(shape);
    if (!seen.insert(host.get<std::string>()).second)
      throw ArgumentError(name + "='" + raw + "' names host " + host.dump() + " twice" + kOutside);
    hosts.push_back(host.get<std::string>());
  }
  return hosts;
}

nlohmann::json parse_json(const std::string& name, const std::string& raw) {
  try {
    return nlohmann::json::parse(raw);
  } catch (const nlohmann::json::exception&) {
    throw ArgumentError(name + "='" + raw + "' is not valid JSON" + kOutside);
  }
}

/// The hosts of SM_CURRENT_INSTANCE_GROUP: SM_CURRENT_INSTANCE_GROUP_HOSTS, else the group's
/// "hosts" in SM_INSTANCE_GROUPS_DICT.
std::vector<std::string> instance_group_hosts(const EnvironmentLookup& lookup,
                                              const std::string& group) {
  if (const auto raw = lookup("SM_CURRENT_INSTANCE_GROUP_HOSTS"))
    return parse_host_list("SM_CURRENT_INSTANCE_GROUP_HOSTS",
                           parse_json("SM_CURRENT_INSTANCE_GROUP_HOSTS", *raw), *raw);
  if (const auto raw = lookup("SM_INSTANCE_GROUPS_DICT")) {
    const nlohmann::json groups = parse_json("SM_INSTANCE_GROUPS_DICT", *raw);
    if (groups.is_object() && groups.contains(group) && groups[group].is_object() &&
        groups[group].contains("hosts"))
      return parse_host_list("SM_INSTANCE_GROUPS_DICT[\"" + group + "\"].hosts",
                             groups[group]["hosts"], groups[group]["hosts"].dump());
    throw ArgumentError("SM_INSTANCE_GROUPS_DICT has no \"hosts\" list for instance group \"" +
                        group + "\" (SM_CURRENT_INSTANCE_GROUP)" + kOutside);
  }
  throw ArgumentError("SM_CURRENT_INSTANCE_GROUP=" + group +
                      " but neither SM_CURRENT_INSTANCE_GROUP_HOSTS nor SM_INSTANCE_GROUPS_DICT "
                      "lists the group's hosts" +
                      kOutside);
}

}  // namespace

std::optional<SageMakerCluster> read_sagemaker_cluster(const EnvironmentLookup& lookup) {
  const auto hosts_raw = lookup("SM_HOSTS");
  const auto current = lookup("SM_CURRENT_HOST");
  if (!hosts_raw && !current) return std::nullopt;
  if (!hosts_raw || !current)
    throw ArgumentError(std::string(hosts_raw ? "SM_HOSTS" : "SM_CURRENT_HOST") + " is set but " +
                        (hosts_raw ? "SM_CURRENT_HOST" : "SM_HOSTS") +
                        " is not: SageMaker sets both" + kOutside);
  SageMakerCluster cluster;
  cluster.current_host = *current;
  cluster.hosts = parse_host_list("SM_HOSTS", parse_json("SM_HOSTS", *hosts_raw), *hosts_raw);
  std::string listed_by = "SM_HOSTS";
  if (const auto group = lookup("SM_CURRENT_INSTANCE_GROUP")) {
    cluster.instance_group = *group;
    cluster.hosts = instance_group_hosts(lookup, *group);
    listed_by = "the hosts of instance group " + *group;
  }
  const auto it = std::find(cluster.hosts.begin(), cluster.hosts.end(), cluster.current_host);
  if (it == cluster.hosts.end())
    throw ArgumentError("SM_CURRENT_HOST=" + cluster.current_host + " is not among " + listed_by +
                        " (" + nlohmann::json(cluster.hosts).dump() + ")" + kOutside);
  cluster.node_rank = it - cluster.hosts.begin();
  if (const auto gpus = lookup("SM_NUM_GPUS")) {
    const bool digits = gpus->find_first_not_of("0123456789") == std::string::npos;
    if (!digits || gpus->size() > 6)
      throw ArgumentError("SM_NUM_GPUS='" + *gpus + "' is not a count of GPUs" + kOutside);
    cluster.num_gpus = std::stoll(*gpus);
  }
  return cluster;
}

}  // namespace ctrainer
