#pragma once
/// \file ctrainer-run-elastic: the elastic agent of one node (torchrun's agent with the c10d
/// rendezvous): joins a round (dynamic_rendezvous.h), runs this node's workers in it, and starts
/// over in the next round when the job's membership changes.
#include <ctrainer/distributed/launcher/launch_options.h>

namespace ctrainer::launcher {

/// Runs `options.elastic()` job's workers on this node to the end; returns the exit code:
/// - 0 when this node's workers of a round all succeed, or the job ended while this node
///   waited (unless its last round failed: then that failure's code);
/// - a worker's failure supersedes the round (every node restarts in the next) and costs one of
///   --max-restarts; with none left, the failure's code (128 + signal for a signal);
/// - a round superseded by another node (its failure, or a node that joins) stops the workers
///   with SIGTERM (they checkpoint) and costs no restart;
/// - SIGTERM, SIGINT, SIGHUP or SIGQUIT are forwarded to the workers, as ctrainer-run does.
/// The node whose address is the --rdzv-endpoint host (or --rdzv-conf is_host=1) serves the
/// rendezvous store (of several agents there, the first; the others reach it); when it goes, no
/// node can leave or join any more.
int run_elastic_agent(const LaunchOptions& options);

}  // namespace ctrainer::launcher
