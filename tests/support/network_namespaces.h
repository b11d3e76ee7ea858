#pragma once
// Simulated nodes for multi-node end-to-end tests: two Linux network namespaces joined by a veth
// pair, so that each "node" has its own network stack (its own loopback, its own address, its own
// ports) while the test's processes still share the file system and the PID space. Needs
// iproute2 and CAP_NET_ADMIN (root); create() says why when they are missing, for GTEST_SKIP.
// No torch here.
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/process.h"

namespace ctrainer::testing {

/// One simulated node: a network namespace, the veth end inside it and that end's address.
struct SimulatedNode {
  std::string netns;      ///< e.g. ctr1234_Ddp_n0
  std::string interface;  ///< the veth end inside `netns` (GLOO_SOCKET_IFNAME for its ranks)
  std::string address;    ///< its IPv4 address, e.g. 10.77.42.1
};

/// Two namespaces <prefix>_n0 and <prefix>_n1, a veth pair between them with 10.77.<subnet>.1/24
/// and 10.77.<subnet>.2/24, and `lo` up in each. Deleted (with every process still running in
/// them) by destroy() or the destructor.
class SimulatedNodes {
 public:
  SimulatedNodes() = default;
  SimulatedNodes(const SimulatedNodes&) = delete;
  SimulatedNodes& operator=(const SimulatedNodes&) = delete;
  ~SimulatedNodes() { destroy(); }

  /// Builds the network; returns "" on success, else why it cannot (the failing command and its
  /// error output, e.g. `ip netns add` without CAP_NET_ADMIN), having undone what it did.
  /// `prefix` must be a valid file name (namespace names are files under /run/netns).
  std::string create(const std::string& prefix, int subnet) {
    ip_ = find_program("ip");
    if (ip_.empty())
      return "iproute2 is not installed (no `ip` on PATH, /usr/sbin or /sbin); "
             "scripts/install-deps.sh installs it";
    const std::string net = "10.77." + std::to_string(subnet) + ".";
    for (int i = 0; i < 2; ++i)
      nodes_[i] = {prefix + "_n" + std::to_string(i), "veth" + std::to_string(i),
                   net + std::to_string(i + 1)};
    // A namespace left behind by a killed earlier run of this very test and pid: remove it.
    for (const auto& node : nodes_) run_shell(ip_ + " netns delete " + node.netns);
    for (const auto& node : nodes_) {
      if (std::string error = run("netns add " + node.netns); !error.empty()) {
        destroy();
        return error;
      }
      created_.push_back(node.netns);
    }
    // Each end is created directly inside its namespace, so the names cannot clash with the
    // host's interfaces or with another test's pair.
    const std::vector<std::string> steps = {
        "link add " + nodes_[0].interface + " netns " + nodes_[0].netns + " type veth peer name " +
            nodes_[1].interface + " netns " + nodes_[1].netns,
        "-n " + nodes_[0].netns + " addr add " + nodes_[0].address + "/24 dev " +
            nodes_[0].interface,
        "-n " + nodes_[1].netns + " addr add " + nodes_[1].address + "/24 dev " +
            nodes_[1].interface,
        "-n " + nodes_[0].netns + " link set lo up",
        "-n " + nodes_[1].netns + " link set lo up",
        "-n " + nodes_[0].netns + " link set " + nodes_[0].interface + " up",
        "-n " + nodes_[1].netns + " link set " + nodes_[1].interface + " up",
    };
    for (const auto& step : steps)
      if (std::string error = run(step); !error.empty()) {
        destroy();
        return error;
      }
    return "";
  }

  const SimulatedNode& node(int i) const { return nodes_.at(static_cast<size_t>(i)); }

  /// The argv prefix that runs a program inside node `i`: ip netns exec <netns>. `ip` execs the
  /// program (no fork), so the pid spawn_process returns is the program's own.
  std::vector<std::string> exec_prefix(int i) const {
    return {ip_, "netns", "exec", node(i).netns};
  }

  /// The pids of every process inside node `i`'s namespace (all of them started by the test:
  /// nothing else runs there), from `ip netns pids`.
  std::vector<pid_t> processes(int i) const {
    std::vector<pid_t> pids;
    if (ip_.empty()) return pids;
    // One pid per line; anything else (an error message) is skipped.
    std::istringstream list(run_shell(ip_ + " netns pids " + node(i).netns).output);
    for (std::string word; list >> word;)
      if (word.find_first_not_of("0123456789") == std::string::npos && std::stol(word) > 1)
        pids.push_back(static_cast<pid_t>(std::stol(word)));
    return pids;
  }

  /// SIGKILLs every process inside node `i` (a launcher and the workers it started alike), again
  /// while any is left (one may have started a process meanwhile), for up to 2 s.
  void kill_processes(int i) const {
    for (int round = 0; round < 100; ++round) {
      const std::vector<pid_t> pids = processes(i);
      if (pids.empty()) return;
      for (const pid_t pid : pids) ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  /// Kills what still runs inside the namespaces, then deletes them (and with them the veth
  /// pair). Safe to call twice and after a failed create().
  void destroy() {
    for (size_t i = 0; i < created_.size(); ++i) kill_processes(static_cast<int>(i));
    for (const auto& netns : created_) run_shell(ip_ + " netns delete " + netns);
    created_.clear();
  }

 private:
  /// Runs `ip <arguments>`; "" on success, else the command and its output.
  std::string run(const std::string& arguments) const {
    const CommandResult result = run_shell(ip_ + " " + arguments);
    if (result.exit_code == 0) return "";
    std::string output = result.output;
    while (!output.empty() && output.back() == '\n') output.pop_back();
    return "`ip " + arguments + "` failed (exit code " + std::to_string(result.exit_code) +
           "): " + output;
  }

  std::string ip_;
  std::array<SimulatedNode, 2> nodes_;
  std::vector<std::string> created_;  ///< namespaces to delete, in creation order
};

}  // namespace ctrainer::testing
