#include <ctrainer/distributed/store_listener.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <ctrainer/distributed/process_group.h>

namespace ctrainer {
namespace {

struct AddressListDeleter {
  void operator()(addrinfo* list) const { freeaddrinfo(list); }
};

bool is_loopback(const sockaddr* address) {
  if (address->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr) >> 24) == 127;
  if (address->sa_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
  return false;
}

/// socket + SO_REUSEADDR + bind + listen; -1 with errno set on failure.
int bind_and_listen(int family, const sockaddr* address, socklen_t length) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (::bind(fd, address, length) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

/// Every interface, dual-stack when IPv6 is there (what c10d's own server does).
int listen_everywhere(int port) {
  sockaddr_in6 any6{};
  any6.sin6_family = AF_INET6;
  any6.sin6_addr = in6addr_any;
  any6.sin6_port = htons(static_cast<uint16_t>(port));
  int fd = bind_and_listen(AF_INET6, reinterpret_cast<sockaddr*>(&any6), sizeof any6);
  if (fd >= 0) return fd;
  sockaddr_in any4{};
  any4.sin_family = AF_INET;
  any4.sin_addr.s_addr = htonl(INADDR_ANY);
  any4.sin_port = htons(static_cast<uint16_t>(port));
  return bind_and_listen(AF_INET, reinterpret_cast<sockaddr*>(&any4), sizeof any4);
}

}  // namespace

int listen_for_store(const std::string& host, int port, bool multi_node, std::string* why_all) {
  const std::string where = "MASTER_ADDR:MASTER_PORT=" + host + ":" + std::to_string(port);
  auto fail = [&](const std::string& why) {
    return DistributedError("rank 0 could not open the rendezvous store at " + where + ": " + why);
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* raw = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &raw); rc != 0)
    throw fail("the name does not resolve (" + std::string(gai_strerror(rc)) +
               "): set MASTER_ADDR to rank 0's host name or address");
  std::unique_ptr<addrinfo, AddressListDeleter> list(raw);

  // IPv4 first: clients try every address of the name, and most setups name IPv4 hosts.
  const addrinfo* chosen = nullptr;
  for (const addrinfo* a = list.get(); a != nullptr; a = a->ai_next)
    if (a->ai_family == AF_INET) {
      chosen = a;
      break;
    }
  if (chosen == nullptr) chosen = list.get();

  const bool wildcard = host == "0.0.0.0" || host == "::";
  if (wildcard || (multi_node && is_loopback(chosen->ai_addr))) {
    if (!wildcard && why_all != nullptr)
      *why_all = "MASTER_ADDR " + host +
                 " is a loopback address on rank 0's node, which the other nodes cannot reach: "
                 "the store listens on every interface (set MASTER_ADDR to the node's own "
                 "address to bind only that one)";
    const int fd = listen_everywhere(port);
    if (fd < 0) throw fail(std::strerror(errno));
    return fd;
  }
  const int fd = bind_and_listen(chosen->ai_family, chosen->ai_addr, chosen->ai_addrlen);
  if (fd >= 0) return fd;
  const int error = errno;
  if (error == EADDRNOTAVAIL)
    throw fail("it is not an address of this machine (" + std::string(std::strerror(error)) +
               "): rank 0 serves the store, so MASTER_ADDR must name rank 0's node");
  throw fail(std::string(std::strerror(error)) +
             (error == EADDRINUSE ? ". Is the port used by another job or a previous attempt? "
                                    "Choose another MASTER_PORT (ctrainer-run --master-port, or "
                                    "--standalone)"
                                  : ""));
}

int bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
  return address.ss_family == AF_INET6
             ? ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port)
             : ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

}  // namespace ctrainer
