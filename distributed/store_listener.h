#pragma once
/// \file The rendezvous store's listening socket, bound where the user asked. c10d's TCPStore
/// binds its server to every interface of the machine; its store is unauthenticated (any peer
/// that reaches the port can read and write the job's keys), so rank 0 binds it to
/// MASTER_ADDR's address only and hands the socket to the store (TCPStoreOptions::masterListenFd).
#include <string>

namespace ctrainer {

/// A socket listening on `port` at the address `host` resolves to (an IPv4 one preferred),
/// with SO_REUSEADDR. When that address is a loopback one but the job spans several nodes
/// (`multi_node`), the other nodes could never reach it (Debian maps a machine's own host name
/// to 127.0.1.1): then every interface is bound and `why_all` says why. "0.0.0.0" or "::" binds
/// every interface, as asked. Throws DistributedError naming MASTER_ADDR and the fix when the
/// name does not resolve or the address is not one of this machine's.
int listen_for_store(const std::string& host, int port, bool multi_node, std::string* why_all);

/// The port a socket is bound to (the one the system chose for port 0).
int bound_port(int fd);

}  // namespace ctrainer
