#pragma once
// Running the real binaries from end-to-end tests: a shell command with its output captured, or
// a child process with its output in files that the test can watch while it runs. No torch here:
// the launcher tests include it too.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ctrainer::testing {

struct CommandResult {
  int exit_code = -1;  ///< the exit code; -1 when the command could not run or was killed
  std::string output;  ///< stdout and stderr, interleaved
};

/// Runs `command` through the shell with stderr merged into stdout and waits for it.
inline CommandResult run_shell(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  for (size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
    result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// Starts `argv` (argv[0] is a path) with stdout in `out` and stderr in `err` (the same file when
/// equal; appended to when `append`, else truncated) and `env` added; returns its pid.
inline pid_t spawn_process(const std::vector<std::string>& argv, const std::filesystem::path& out,
                           const std::filesystem::path& err,
                           const std::map<std::string, std::string>& env = {},
                           bool append = false) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    const int mode = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC);
    const int out_fd = ::open(out.c_str(), mode, 0644);
    const int err_fd = err == out ? out_fd : ::open(err.c_str(), mode, 0644);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

/// Waits for `pid`: its exit code, or 128 + signal when a signal killed it.
inline int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Waits for `pid` at most `timeout`: its exit code as wait_for() gives it, or nullopt when it
/// still runs (it is left running).
inline std::optional<int> wait_for(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (done < 0) return -1;  // not our child, or already reaped
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// The path of the program `name` on PATH, then in /usr/sbin and /sbin (where iproute2's `ip`
/// lives, often missing from a user's PATH); "" when there is none.
inline std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream folders(std::string(path != nullptr ? path : "") + ":/usr/sbin:/sbin");
  for (std::string folder; std::getline(folders, folder, ':');) {
    if (folder.empty()) continue;
    const std::string candidate = folder + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

/// A finished job: what spawn_process started, with its output in one log file.
struct JobResult {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr (a launcher's workers inherit them)
  double seconds = 0;
};

/// Runs `argv` (with `env` added) to its end, stdout and stderr in `log`; prints how it ended.
inline JobResult run_job(const std::vector<std::string>& argv, const std::filesystem::path& log,
                         const std::map<std::string, std::string>& env = {}) {
  const auto start = std::chrono::steady_clock::now();
  JobResult job;
  job.exit_code = wait_for(spawn_process(argv, log, log, env));
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(log, std::ios::binary);
  job.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::printf("%s: exit %d after %.1f s\n", log.filename().c_str(), job.exit_code, job.seconds);
  return job;
}

/// A TCP port on 127.0.0.1 that was free a moment ago (for rendezvous in tests).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

/// torchrun's variables for rank `rank` of a one-node job of `world_size` processes that meet
/// at 127.0.0.1:`port`, one intra-op thread each: for starting ranks directly, without a
/// launcher that would stop the others when one fails.
inline std::map<std::string, std::string> torchrun_environment(int rank, int world_size, int port) {
  return {{"RANK", std::to_string(rank)},
          {"LOCAL_RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world_size)},
          {"LOCAL_WORLD_SIZE", std::to_string(world_size)},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(port)},
          {"OMP_NUM_THREADS", "1"}};
}

}  // namespace ctrainer::testing
