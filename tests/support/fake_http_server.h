#pragma once
// A loopback HTTP/1.1 server for tests of HTTP clients: it records every request and answers
// each with what a handler returns (one connection per request, then closed).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ctrainer::testing {

class FakeHttpServer {
 public:
  struct Request {
    std::string method, path, body;
  };
  struct Reply {
    int status = 200;
    std::string body = "{}";
  };
  using Handler = std::function<Reply(const Request&)>;

  explicit FakeHttpServer(Handler handler) : handler_(std::move(handler)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
      throw std::runtime_error("FakeHttpServer: cannot listen on loopback");
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeHttpServer() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Request> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd ready{listener_, POLLIN, 0};
      if (::poll(&ready, 1, 50) <= 0) continue;
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) continue;
      Request request = read_request(client);
      Reply reply;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        requests_.push_back(request);
      }
      reply = handler_(request);
      const std::string answer = "HTTP/1.1 " + std::to_string(reply.status) +
                                 " X\r\nContent-Type: application/json\r\nContent-Length: " +
                                 std::to_string(reply.body.size()) +
                                 "\r\nConnection: close\r\n\r\n" + reply.body;
      (void)!::write(client, answer.data(), answer.size());
      ::close(client);
    }
  }
  static Request read_request(int client) {
    std::string data;
    char buffer[4096];
    size_t header_end = std::string::npos;
    size_t body_length = 0;
    while (true) {
      if (header_end != std::string::npos && data.size() >= header_end + 4 + body_length) break;
      const ssize_t got = ::read(client, buffer, sizeof(buffer));
      if (got <= 0) break;
      data.append(buffer, static_cast<size_t>(got));
      if (header_end == std::string::npos &&
          (header_end = data.find("\r\n\r\n")) != std::string::npos) {
        const size_t at = data.find("Content-Length: ");
        if (at != std::string::npos && at < header_end)
          body_length = std::strtoul(data.c_str() + at + 16, nullptr, 10);
      }
    }
    Request request;
    const size_t space = data.find(' ');
    request.method = data.substr(0, space);
    request.path = data.substr(space + 1, data.find(' ', space + 1) - space - 1);
    if (header_end != std::string::npos) request.body = data.substr(header_end + 4);
    return request;
  }

  Handler handler_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<Request> requests_;
  std::thread thread_;
};

}  // namespace ctrainer::testing
