#include "bench_process.h"

#include "bench_commands.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace ctrainer::bench {
namespace {

/// Adds "open `path` for writing as `fd`" to the spawn's file actions.
void redirect(posix_spawn_file_actions_t& actions, int fd, const std::string& path) {
  if (path.empty()) return;
  posix_spawn_file_actions_addopen(&actions, fd, path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
}

}  // namespace

std::string ChildResult::describe(double timeout_seconds) const {
  if (timed_out) return fmt::format("timed out after {:.0f} s (killed)", timeout_seconds);
  if (term_signal != 0) return fmt::format("killed by signal {}", term_signal);
  return fmt::format("exit status {}", exit_code);
}

std::vector<std::string> environment_with(const std::vector<std::string>& entries,
                                          const std::vector<std::string>& dropped) {
  const auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::set<std::string> replaced(dropped.begin(), dropped.end());
  for (const auto& entry : entries) replaced.insert(name_of(entry));
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (replaced.count(name_of(*e)) == 0) env.emplace_back(*e);
  env.insert(env.end(), entries.begin(), entries.end());
  return env;
}

double unix_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ChildResult run_child(const ChildSpec& spec) {
  if (spec.argv.empty()) throw std::runtime_error("run_child: empty command");
  // The output files are opened here first, so that a bad path is an error that names it
  // rather than a child that dies silently in the spawn.
  for (const auto* path : {&spec.stdout_path, &spec.stderr_path})
    if (!path->empty() && !std::ofstream(*path)) throw std::runtime_error("cannot create " + *path);
  if (::access(spec.argv[0].c_str(), X_OK) != 0)
    throw std::runtime_error(spec.argv[0] + " is not an executable program (" +
                             std::strerror(errno) + ")");

  std::vector<std::string> env = environment_with(spec.env);
  std::vector<char*> envp, argv;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  redirect(actions, STDOUT_FILENO, spec.stdout_path);
  redirect(actions, STDERR_FILENO, spec.stderr_path);
  ChildResult result;
  pid_t pid = 0;
  const auto start = std::chrono::steady_clock::now();
  result.spawn_unix_time = unix_time_now();
  const int error = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(error));

  // Polls instead of blocking so that a hung child can be killed at the timeout; the poll's
  // granularity only affects wall_seconds, which no metric is computed from.
  int status = 0;
  rusage usage{};
  for (;;) {
    const pid_t done = ::wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    if (done < 0 && errno != EINTR)
      throw std::runtime_error(
          fmt::format("wait4 on {} failed: {}", args[0], std::strerror(errno)));
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (spec.timeout_seconds > 0 && elapsed > spec.timeout_seconds && !result.timed_out) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.max_rss_kb = usage.ru_maxrss;  // Linux: KiB
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  return result;
}

std::string file_tail(const std::string& path, int max_lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  constexpr std::streamoff kMaxBytes = 8192;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - kMaxBytes));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t cut = text.size();
  for (int lines = 0; cut > 0; --cut) {
    // The last character is usually the final newline; it does not start a line.
    if (text[cut - 1] == '\n' && cut != text.size() && ++lines == max_lines) break;
  }
  return text.substr(cut);
}

}  // namespace ctrainer::bench
