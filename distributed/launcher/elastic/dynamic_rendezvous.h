#pragma once
/// \file ctrainer-run's dynamic rendezvous (--rdzv-backend c10d): the nodes of an elastic job
/// meet in numbered rounds on a c10d Store. A round closes when --nnodes MAX nodes joined, or MIN
/// and no other for last_call_timeout (a round a new node asked for first waits for the nodes it
/// replaced, within rejoin_window); its nodes get ranks in the order of their addresses (as
/// text; then of joining), and node 0
/// publishes the address and a free port of its own for the workers' store. A round ends for
/// good when its workers finish; it is superseded (round + 1) when a node's worker fails, or
/// when a node arrives while fewer than MAX run, and every node then restarts its workers in the
/// next round. The protocol is ctrainer-run's own (every node of a job runs ctrainer-run-elastic);
/// it uses the store's atomic add and compare-set only, under "/ctrainer-run/<run id>/".
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Store;
}

namespace ctrainer::launcher {

/// What the nodes of a job agree on, and who this node is.
struct RendezvousSettings {
  std::string run_id;                              ///< --rdzv-id
  int64_t min_nodes = 1;                           ///< --nnodes MIN
  int64_t max_nodes = 1;                           ///< --nnodes MAX
  std::chrono::milliseconds last_call{30000};      ///< wait for more nodes once MIN joined
  std::chrono::milliseconds join_timeout{600000};  ///< give up when a round does not close
  /// How long a round that a new node asked for waits for the nodes of the round it replaced
  /// (they stop their workers first: --grace-period at most) before the last call may close it.
  std::chrono::milliseconds rejoin_window{35000};
  std::string node_address;  ///< where the other nodes reach this one (--local-addr)
  std::chrono::milliseconds poll_interval{50};
  /// Where the rendezvous' messages go (ctrainer-run: "[ctrainer-run] ..." on stderr).
  std::function<void(const std::string&)> report = [](const std::string&) {};
};

/// This node's place in a closed round.
struct RoundAssignment {
  int64_t round = 0;
  int64_t node_rank = 0;    ///< the order in which the node joined
  int64_t nnodes = 1;       ///< nodes in the round
  std::string master_addr;  ///< node 0's address: its rank-0 worker serves the workers' store
  int master_port = 0;
};

class DynamicRendezvous {
 public:
  DynamicRendezvous(c10::intrusive_ptr<c10d::Store> store, RendezvousSettings settings);
  ~DynamicRendezvous();

  /// Joins the next round and waits for it to close. `free_port` gives node 0's port for the
  /// workers; `stop_requested` ends the wait (the launcher got a signal). Returns nullopt when
  /// the job has ended (a node's workers finished) or a stop was requested. Throws
  /// std::runtime_error when no round closes within join_timeout, naming how many nodes came.
  std::optional<RoundAssignment> join(const std::function<int()>& free_port,
                                      const std::function<bool()>& stop_requested);

  /// True when `round` was superseded: its nodes must stop their workers and join the next.
  /// A store that cannot be reached any more counts as not superseded (warned once).
  bool superseded(int64_t round);

  /// Supersedes `round` (this node's worker failed): the others restart in the next round.
  void supersede(int64_t round);

  /// This node's workers of `round` finished: the job has ended (later joiners go home).
  void finish(int64_t round);

  /// Waits (at most `timeout`) until every node of the round said finish(): the node that serves
  /// the store keeps it up for the others.
  void await_everyone_finished(const RoundAssignment& assignment,
                               std::chrono::milliseconds timeout);

 private:
  std::string key(const std::string& name) const;
  std::string round_key(int64_t round, const std::string& name) const;
  int64_t current_round();
  bool has(const std::string& key);
  std::string get(const std::string& key);

  c10::intrusive_ptr<c10d::Store> store_;
  RendezvousSettings settings_;
  bool store_lost_ = false;
};

}  // namespace ctrainer::launcher
