#include <ctrainer/distributed/launcher/elastic/dynamic_rendezvous.h>

#include <algorithm>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <ctrainer/core/errors.h>

namespace ctrainer::launcher {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<uint8_t> bytes(const std::string& text) {
  return {text.begin(), text.end()};
}
std::string text(const std::vector<uint8_t>& data) {
  return {data.begin(), data.end()};
}

}  // namespace

DynamicRendezvous::DynamicRendezvous(c10::intrusive_ptr<c10d::Store> store,
                                     RendezvousSettings settings)
    : store_(std::move(store)), settings_(std::move(settings)) {}

DynamicRendezvous::~DynamicRendezvous() = default;

std::string DynamicRendezvous::key(const std::string& name) const {
  return "/ctrainer-run/" + settings_.run_id + "/" + name;
}

std::string DynamicRendezvous::round_key(int64_t round, const std::string& name) const {
  return key("round_" + std::to_string(round) + "/" + name);
}

// The round counter is an add() counter, so its value is stored as decimal text, which
// compareSet can then compare.
int64_t DynamicRendezvous::current_round() {
  return store_->add(key("round"), 0);
}

bool DynamicRendezvous::has(const std::string& name) {
  return store_->check({name});
}

std::string DynamicRendezvous::get(const std::string& name) {
  return text(store_->get(name));
}

std::optional<RoundAssignment> DynamicRendezvous::join(
    const std::function<int()>& free_port, const std::function<bool()>& stop_requested) {
  const auto deadline = Clock::now() + settings_.join_timeout;
  const auto sleep = [&] { std::this_thread::sleep_for(settings_.poll_interval); };
  const auto timed_out = [&](const std::string& why) {
    return std::runtime_error("rendezvous '" + settings_.run_id + "' at --rdzv-endpoint: " + why +
                              " within join_timeout (" +
                              std::to_string(settings_.join_timeout.count() / 1000) +
                              " s); start more nodes, or lower --nnodes MIN");
  };
  for (;;) {
    if (has(key("done"))) return std::nullopt;
    const int64_t round = current_round();
    // A closed round runs: one that could take this node is asked to restart with it; a full
    // one is waited out (it is superseded when one of its nodes fails).
    if (has(round_key(round, "size"))) {
      const int64_t size = std::stoll(get(round_key(round, "size")));
      if (size < settings_.max_nodes) {
        // The next round waits for the running nodes, which rejoin once their workers stopped.
        store_->compareSet(round_key(round + 1, "expected"), {},
                           bytes(std::to_string(std::min(size + 1, settings_.max_nodes))));
        settings_.report("rendezvous: round " + std::to_string(round) + " runs on " +
                         std::to_string(size) + " of at most " +
                         std::to_string(settings_.max_nodes) +
                         " nodes; asking it to restart with this one");
        supersede(round);
      } else {
        while (current_round() == round && !has(key("done"))) {
          if (stop_requested()) return std::nullopt;
          if (Clock::now() > deadline)
            throw timed_out("round " + std::to_string(round) + " kept its " + std::to_string(size) +
                            " nodes (the most --nnodes allows)");
          sleep();
        }
      }
      continue;
    }
    const int64_t index = store_->add(round_key(round, "joined"), 1);  // 1-based join order
    store_->set(round_key(round, "node_" + std::to_string(index - 1)),
                bytes(settings_.node_address));
    settings_.report("rendezvous: joined round " + std::to_string(round) + " (" +
                     std::to_string(index) + (index == 1 ? " node" : " nodes") +
                     " so far; --nnodes " + std::to_string(settings_.min_nodes) + ":" +
                     std::to_string(settings_.max_nodes) + "); waiting for it to close");
    // Wait for the round to close: MAX nodes, or MIN and a quiet last call. Whichever node sees
    // it first writes the size; compareSet keeps the first size written.
    const int64_t expected = has(round_key(round, "expected"))
                                 ? std::stoll(get(round_key(round, "expected")))
                                 : settings_.min_nodes;
    const auto joined_at = Clock::now();
    int64_t last_count = index;
    auto last_change = joined_at;
    bool superseded_meanwhile = false;
    while (!has(round_key(round, "size"))) {
      if (stop_requested()) return std::nullopt;
      if (current_round() != round) {
        superseded_meanwhile = true;
        break;
      }
      const int64_t count = store_->add(round_key(round, "joined"), 0);
      if (count != last_count) {
        last_count = count;
        last_change = Clock::now();
      }
      if (count >= settings_.max_nodes) {
        store_->compareSet(round_key(round, "size"), {},
                           bytes(std::to_string(settings_.max_nodes)));
      } else if (count >= settings_.min_nodes &&
                 Clock::now() - last_change >= settings_.last_call &&
                 (count >= expected || Clock::now() - joined_at >= settings_.rejoin_window)) {
        store_->compareSet(round_key(round, "size"), {}, bytes(std::to_string(count)));
      }
      if (Clock::now() > deadline)
        throw timed_out(std::to_string(count) + " of at least " +
                        std::to_string(settings_.min_nodes) + " nodes joined round " +
                        std::to_string(round));
      sleep();
    }
    if (superseded_meanwhile) continue;
    const int64_t size = std::stoll(get(round_key(round, "size")));
    if (index > size) continue;  // came after it closed: the next pass asks it to restart
    // Node ranks follow the nodes' addresses (then the join order), as torchrun orders its
    // agents, so that a job's layout does not depend on which node started first.
    std::vector<std::pair<std::string, int64_t>> nodes;
    for (int64_t i = 0; i < size; ++i) {
      const std::string node_key = round_key(round, "node_" + std::to_string(i));
      while (!has(node_key)) {  // written just after its node's add()
        if (Clock::now() > deadline)
          throw timed_out("node #" + std::to_string(i) + " of round " + std::to_string(round) +
                          " did not give its address");
        sleep();
      }
      nodes.emplace_back(get(node_key), i);
    }
    std::sort(nodes.begin(), nodes.end());
    RoundAssignment assignment;
    assignment.round = round;
    assignment.node_rank =
        std::find(nodes.begin(), nodes.end(), std::make_pair(settings_.node_address, index - 1)) -
        nodes.begin();
    assignment.nnodes = size;
    if (assignment.node_rank == 0)
      store_->set(round_key(round, "master"),
                  bytes(settings_.node_address + ":" + std::to_string(free_port())));
    while (!has(round_key(round, "master"))) {
      if (stop_requested()) return std::nullopt;
      if (Clock::now() > deadline)
        throw timed_out("node 0 of round " + std::to_string(round) +
                        " did not publish its address");
      sleep();
    }
    const std::string master = get(round_key(round, "master"));
    const auto colon = master.rfind(':');
    assignment.master_addr = master.substr(0, colon);
    assignment.master_port = std::stoi(master.substr(colon + 1));
    return assignment;
  }
}

bool DynamicRendezvous::superseded(int64_t round) {
  if (store_lost_) return false;
  try {
    return current_round() != round;
  } catch (const std::exception& error) {
    store_lost_ = true;
    settings_.report("rendezvous: the store cannot be reached any more (" +
                     std::string(error.what()) +
                     "); the workers go on, but no node can leave or join this job now");
    return false;
  }
}

void DynamicRendezvous::supersede(int64_t round) {
  try {
    store_->compareSet(key("round"), bytes(std::to_string(round)),
                       bytes(std::to_string(round + 1)));
  } catch (const std::exception& error) {
    settings_.report("rendezvous: could not supersede round " + std::to_string(round) + ": " +
                     error.what());
  }
}

void DynamicRendezvous::finish(int64_t round) {
  try {
    store_->set(key("done"), bytes(std::to_string(round)));
    store_->add(round_key(round, "finished"), 1);
  } catch (const std::exception&) {
    // The node serving the store ended first: nothing is left to tell.
  }
}

void DynamicRendezvous::await_everyone_finished(const RoundAssignment& assignment,
                                                std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline &&
         store_->add(round_key(assignment.round, "finished"), 0) < assignment.nnodes)
    std::this_thread::sleep_for(settings_.poll_interval);
}

}  // namespace ctrainer::launcher
