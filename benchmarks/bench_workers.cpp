#include "bench_workers.h"

#include "bench_process.h"

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace ctrainer::bench {
namespace {

namespace fs = std::filesystem;

/// A TCP port on 127.0.0.1 that was free a moment ago, for the workers' rendezvous.
int free_port(const std::string& scenario) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool ok = fd >= 0 &&
                  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) throw std::runtime_error(scenario + ": cannot find a free TCP port on 127.0.0.1");
  return ntohs(address.sin_port);
}

}  // namespace

std::vector<nlohmann::json> run_workers(const WorkerLaunch& launch) {
  const std::string& scenario = launch.scenario;
  const int world = launch.world;
  const std::string prefix =
      (fs::temp_directory_path() / fmt::format("ctrainer_bench_{}_{}", scenario, getpid()))
          .string();
  const int port = free_port(scenario);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string scenario_arg = scenario;
  std::vector<char*> argv = {self.data(), scenario_arg.data(), nullptr};
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> ours = launch.env;
    ours.push_back(fmt::format("{}={}", launch.worker_env, prefix));
    if (world > 1) {
      ours.push_back(fmt::format("RANK={}", rank));
      ours.push_back(fmt::format("LOCAL_RANK={}", rank));
      ours.push_back(fmt::format("WORLD_SIZE={}", world));
      ours.push_back(fmt::format("LOCAL_WORLD_SIZE={}", world));
      ours.push_back("MASTER_ADDR=127.0.0.1");
      ours.push_back(fmt::format("MASTER_PORT={}", port));
    }
    // Our own variables win over inherited ones of the same name, and a 1-process run must not
    // inherit a torchrun environment it did not ask for.
    std::vector<std::string> env = environment_with(
        ours,
        {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"});
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) {
      for (pid_t started : pids) ::kill(started, SIGTERM);
      throw std::runtime_error(scenario + ": cannot start a worker process of " + self);
    }
    pids.push_back(pid);
  }

  std::string failure;
  std::vector<bool> running(pids.size(), true);
  std::vector<long> max_rss_kb(pids.size(), 0);
  for (std::size_t left = pids.size(); left > 0;) {
    for (std::size_t r = 0; r < pids.size(); ++r) {
      int status = 0;
      rusage usage{};
      if (!running[r] || ::wait4(pids[r], &status, WNOHANG, &usage) != pids[r]) continue;
      running[r] = false;
      max_rss_kb[r] = usage.ru_maxrss;
      --left;
      if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && failure.empty()) {
        failure = fmt::format(
            "{}: worker rank {} of {} failed (wait status {}); its error is on stderr above",
            scenario, r, world, status);
        for (std::size_t other = 0; other < pids.size(); ++other)
          if (running[other]) ::kill(pids[other], SIGTERM);
      }
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<nlohmann::json> reports;
  for (int rank = 0; rank < world; ++rank) {
    const std::string path = fmt::format("{}.{}.json", prefix, rank);
    if (failure.empty()) {
      std::ifstream in(path);
      if (!in)
        failure = fmt::format("{}: worker rank {} wrote no {}", scenario, rank, path);
      else
        reports.push_back(nlohmann::json::parse(in));
      if (failure.empty() && reports.back().is_object())
        reports.back()["max_rss_bytes"] = static_cast<int64_t>(max_rss_kb[rank]) * 1024;
    }
    fs::remove(path);
  }
  if (!failure.empty()) throw std::runtime_error(failure);
  return reports;
}

double load_average() {
  double load = -1;
  std::ifstream("/proc/loadavg") >> load;
  return load;
}

}  // namespace ctrainer::bench
