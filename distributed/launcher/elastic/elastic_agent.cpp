#include <ctrainer/distributed/launcher/elastic/elastic_agent.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher/elastic/dynamic_rendezvous.h>
#include <ctrainer/distributed/launcher/worker_group.h>

namespace ctrainer::launcher {
namespace {

using std::chrono::milliseconds;

/// The IPv4 address of `host` (a name or an address).
std::string resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr)
    throw ArgumentError("--rdzv-endpoint " + host +
                        ": the host name does not resolve to an "
                        "IPv4 address");
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
              sizeof text);
  ::freeaddrinfo(found);
  return text;
}

/// The address this machine sends from to reach `address`:`port` (a UDP socket's route; nothing
/// is sent).
std::string route_to(const std::string& address, int port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address.c_str(), &target.sin_addr);
  sockaddr_in local{};
  socklen_t length = sizeof local;
  const bool ok = fd >= 0 &&
                  ::connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof target) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok)
    throw ArgumentError("no route from this machine to --rdzv-endpoint " + address +
                        "; pass --local-addr with this node's address");
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
  return text;
}

/// Whether `address` belongs to this machine (a socket can be bound to it).
bool is_local(const std::string& address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in bound{};
  bound.sin_family = AF_INET;
  ::inet_pton(AF_INET, address.c_str(), &bound.sin_addr);
  const bool local = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&bound), sizeof bound) == 0;
  if (fd >= 0) ::close(fd);
  return local;
}

/// The rendezvous store at the endpoint: served here when this node hosts it, else reached.
c10::intrusive_ptr<c10d::TCPStore> open_store(const LaunchOptions& options,
                                              const std::string& endpoint_address, bool host) {
  c10d::TCPStoreOptions store;
  store.port = static_cast<uint16_t>(options.master_port);
  store.isServer = host;
  store.waitWorkers = false;
  store.timeout = milliseconds(static_cast<int64_t>(options.rdzv_join_timeout_s * 1000));
  const std::string where = options.master_addr + ":" + std::to_string(options.master_port);
  const auto failure = [&](const std::string& why) {
    return std::runtime_error(
        (host ? "could not serve the rendezvous store on port " +
                    std::to_string(options.master_port) + " (--rdzv-endpoint " + where + ")"
              : "could not reach the rendezvous store at --rdzv-endpoint " + where) +
        ": " + why +
        (host ? ". Is the port in use?" : ". Is the node that serves it (its host) up?"));
  };
  try {
    return c10::make_intrusive<c10d::TCPStore>(endpoint_address, store);
  } catch (const c10::Error& error) {
    throw failure(error.what_without_backtrace());  // what() adds a C++ backtrace
  } catch (const std::exception& error) {
    throw failure(error.what());
  }
}

}  // namespace

int run_elastic_agent(const LaunchOptions& options) {
  const std::optional<std::filesystem::path> log_dir = prepare_workers(options);
  const std::string endpoint_address = resolve(options.master_addr);
  const std::string node_address =
      options.local_addr ? *options.local_addr : route_to(endpoint_address, options.master_port);
  bool host = options.rdzv_is_host.value_or(is_local(endpoint_address));
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = open_store(options, endpoint_address, host);
  } catch (const std::exception& error) {
    // Several agents on the endpoint's machine: the first serves, the others reach it.
    if (!host || options.rdzv_is_host) throw;
    say(std::string(error.what()) +
        "; reaching it as a client instead (another agent here "
        "serves it, or pass --rdzv-conf is_host=0)");
    host = false;
    store = open_store(options, endpoint_address, host);
  }

  RendezvousSettings settings;
  settings.run_id = options.run_id;
  settings.min_nodes = options.min_nodes;
  settings.max_nodes = options.max_nodes;
  settings.last_call = milliseconds(static_cast<int64_t>(options.rdzv_last_call_timeout_s * 1000));
  settings.join_timeout = milliseconds(static_cast<int64_t>(options.rdzv_join_timeout_s * 1000));
  settings.node_address = node_address;
  settings.report = say;
  settings.rejoin_window =
      settings.last_call + milliseconds(static_cast<int64_t>(
                               (options.grace_period_s + 5 * options.monitor_interval_s) * 1000));
  DynamicRendezvous rendezvous(store, settings);
  say("elastic job '" + options.run_id + "': " + std::to_string(options.min_nodes) + " to " +
      std::to_string(options.max_nodes) + " nodes of " + std::to_string(options.nproc_per_node) +
      " processes; this node is " + node_address +
      (host ? ", serving the rendezvous store on port " + std::to_string(options.master_port)
            : ""));

  SignalCatcher catcher;
  int64_t failures = 0;
  int last_failure = 0;  // the code of this node's last failed round, until a round succeeds
  for (int64_t attempt = 0;; ++attempt) {
    const int signals_seen = signals_received();
    const std::optional<RoundAssignment> round =
        rendezvous.join([&] { return pick_free_port(node_address); },
                        [&] { return signals_received() != signals_seen; });
    if (!round) {
      if (signals_received() != signals_seen) return 128 + last_signal();
      say("the job has ended (another node's workers finished)" +
          (last_failure != 0 ? "; this node's last round failed: exiting with code " +
                                   std::to_string(last_failure)
                             : std::string("; nothing to do")));
      return last_failure;
    }
    say("round " + std::to_string(round->round) + ": node " + std::to_string(round->node_rank) +
        " of " + std::to_string(round->nnodes) + ", world size " +
        std::to_string(round->nnodes * options.nproc_per_node) + ", workers' store at " +
        round->master_addr + ":" + std::to_string(round->master_port));
    LaunchOptions layout = options;
    layout.nnodes = round->nnodes;
    layout.node_rank = round->node_rank;
    Rendezvous workers;
    workers.master_addr = round->master_addr;
    workers.master_port = round->master_port;
    workers.run_id = options.run_id;
    workers.restart_count = failures;  // torchrun counts the restarts after failures only
    GroupResult result;
    {
      WorkerGroup group(layout, workers, log_dir, attempt);
      result = group.watch(signals_seen, [&] { return rendezvous.superseded(round->round); });
    }
    switch (result.end) {
      case GroupEnd::kSucceeded:
        rendezvous.finish(round->round);
        if (host) rendezvous.await_everyone_finished(*round, milliseconds(60000));
        return 0;
      case GroupEnd::kSignalled:
        return result.exit_code;
      case GroupEnd::kMembershipChanged:
        last_failure = 0;
        say("round " + std::to_string(round->round) +
            " was superseded (a node failed or wants to join); joining the next round");
        continue;
      case GroupEnd::kWorkerFailed:
        last_failure = result.exit_code;
        rendezvous.supersede(round->round);
        if (failures >= options.max_restarts) {
          say("all " + std::to_string(options.max_restarts) +
              " restarts used (--max-restarts); exiting with code " +
              std::to_string(result.exit_code));
          return result.exit_code;
        }
        ++failures;
        say("restarting in the next round (restart " + std::to_string(failures) + " of " +
            std::to_string(options.max_restarts) + ")");
        continue;
    }
  }
}

}  // namespace ctrainer::launcher
