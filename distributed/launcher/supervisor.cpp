#include <ctrainer/distributed/launcher/supervisor.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher/log_tail.h>
#include <ctrainer/distributed/launcher/worker_environment.h>
#include <ctrainer/distributed/launcher/worker_process.h>

namespace ctrainer::launcher {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

std::atomic<int> g_last_signal{0};
std::atomic<int> g_signal_count{0};

extern "C" void on_launcher_signal(int signal) {
  g_last_signal.store(signal);
  g_signal_count.fetch_add(1);
}

/// While alive, the forwarded signals only set the flags above (restored afterwards).
class SignalCatcher {
 public:
  SignalCatcher() {
    struct sigaction action {};
    action.sa_handler = on_launcher_signal;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
      ::sigaction(kForwardedSignals[i], &action, &previous_[i]);
  }
  ~SignalCatcher() {
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
      ::sigaction(kForwardedSignals[i], &previous_[i], nullptr);
  }
  SignalCatcher(const SignalCatcher&) = delete;
  SignalCatcher& operator=(const SignalCatcher&) = delete;

 private:
  struct sigaction previous_[std::size(kForwardedSignals)]{};
};

void say(const std::string& text) {
  std::fprintf(stderr, "[ctrainer-run] %s\n", text.c_str());
  std::fflush(stderr);
}

std::string signal_name(int signal) {
  const char* abbreviation = ::sigabbrev_np(signal);
  return abbreviation != nullptr ? "SIG" + std::string(abbreviation) : std::to_string(signal);
}

std::string who(const WorkerProcess& worker) {
  return "rank " + std::to_string(worker.rank()) + " (local " +
         std::to_string(worker.local_rank()) + ", pid " + std::to_string(worker.pid()) + ")";
}

/// A port that was free a moment ago on 127.0.0.1 (--standalone).
int pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok)
    throw std::runtime_error(std::string("no free port on 127.0.0.1: ") + std::strerror(error));
  return ntohs(address.sin_port);
}

/// torchrun gives a standalone job a random run id.
std::string random_run_id() {
  unsigned char bytes[8] = {};
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)!::read(fd, bytes, sizeof bytes);
    ::close(fd);
  }
  std::string id;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    id += hex;
  }
  return id;
}

fs::path prepare_log_dir(const LaunchOptions& options) {
  if (options.log_dir) {
    std::error_code error;
    fs::create_directories(*options.log_dir, error);
    if (error)
      throw ArgumentError("--log-dir " + *options.log_dir + ": cannot create it (" +
                          error.message() + ")");
    return *options.log_dir;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/ctrainer-run_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw ArgumentError("cannot create a temporary log folder (" + pattern +
                        "); pass --log-dir: " + std::strerror(errno));
  return pattern;
}

void sleep_seconds(double seconds) {
  // A signal interrupts the sleep, so forwarding starts at once.
  timespec duration{
      static_cast<time_t>(seconds),
      static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9)};
  ::nanosleep(&duration, nullptr);
}

/// The workers of one attempt and the log tails of their tee'd streams.
struct Attempt {
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::vector<LogTail> tails;

  void poll_tails() {
    for (auto& tail : tails) tail.poll();
  }
  void finish_tails() {
    for (auto& tail : tails) tail.finish();
  }
  bool any_running() const {
    for (const auto& worker : workers)
      if (worker->running()) return true;
    return false;
  }
  /// The shell code of the lowest rank that did not succeed, or 0.
  int status() const {
    for (const auto& worker : workers)
      if (worker->exit() && !worker->exit()->succeeded()) return worker->exit()->shell_code();
    return 0;
  }
};

Attempt start_attempt(const LaunchOptions& options, const Rendezvous& rendezvous,
                      const std::optional<fs::path>& log_dir) {
  Attempt attempt;
  for (int64_t local_rank = 0; local_rank < options.nproc_per_node; ++local_rank) {
    WorkerSpec spec;
    spec.local_rank = local_rank;
    spec.rank = options.node_rank * options.nproc_per_node + local_rank;
    spec.command = options.command;
    spec.environment = worker_environment(options, rendezvous, local_rank);
    const unsigned files = options.file_streams(local_rank);
    const bool shown = options.shown_on_console(local_rank);
    const unsigned tee = local_rank < static_cast<int64_t>(options.tee.size())
                             ? options.tee[static_cast<size_t>(local_rank)]
                             : 0u;
    fs::path folder;
    if (log_dir) {
      // torchrun's layout: <log dir>/attempt_<restart count>/<local rank>/{stdout,stderr}.log
      folder = *log_dir / ("attempt_" + std::to_string(rendezvous.restart_count)) /
               std::to_string(local_rank);
      fs::create_directories(folder);
    }
    const std::string prefix = "[" + options.role + std::to_string(local_rank) + "]:";
    const auto route = [&](unsigned stream, std::string& path, const char* file, int console) {
      if (files & stream) {
        path = (folder / file).string();
        std::error_code ignored;
        fs::remove(path, ignored);  // a rerun into the same --log-dir starts fresh files
        if ((tee & stream) && shown) attempt.tails.emplace_back(path, prefix, console);
      } else if (!shown) {
        path = "/dev/null";
      }
    };
    route(kStdout, spec.stdout_path, "stdout.log", 1);
    route(kStderr, spec.stderr_path, "stderr.log", 2);
    attempt.workers.push_back(std::make_unique<WorkerProcess>(spec));
  }
  return attempt;
}

/// Sends `signal` to every running worker, then SIGKILL to those still running after the grace
/// period (or at once when another signal reaches the launcher). Waits for all of them.
void stop_workers(Attempt& attempt, int signal, const LaunchOptions& options) {
  for (auto& worker : attempt.workers) worker->signal(signal);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.grace_period_s));
  const int signals_before = g_signal_count.load();
  bool killed = false;
  while (true) {
    attempt.poll_tails();
    for (auto& worker : attempt.workers) {
      if (worker->running() && !worker->poll())
        say(who(*worker) + " stopped: " + worker->exit()->describe());
    }
    if (!attempt.any_running()) break;
    if (!killed && (Clock::now() >= deadline || g_signal_count.load() != signals_before)) {
      for (auto& worker : attempt.workers)
        if (worker->running()) {
          say(who(*worker) + " did not stop after " + signal_name(signal) + ": sending SIGKILL");
          worker->signal(SIGKILL);
        }
      killed = true;
    }
    sleep_seconds(std::min(0.05, options.monitor_interval_s));
  }
  attempt.finish_tails();
}

enum class AttemptEnd { kSucceeded, kWorkerFailed, kSignalled };

struct AttemptResult {
  AttemptEnd end = AttemptEnd::kSucceeded;
  int exit_code = 0;
};

AttemptResult monitor(Attempt& attempt, const LaunchOptions& options, int signals_seen) {
  while (true) {
    attempt.poll_tails();
    std::vector<const WorkerProcess*> failed;
    for (auto& worker : attempt.workers)
      if (worker->running() && !worker->poll() && !worker->exit()->succeeded())
        failed.push_back(worker.get());
    if (!failed.empty()) {
      for (const WorkerProcess* worker : failed)
        say(who(*worker) + " failed: " + worker->exit()->describe());
      if (attempt.any_running()) say("stopping the other workers");
      stop_workers(attempt, SIGTERM, options);
      return {AttemptEnd::kWorkerFailed, failed.front()->exit()->shell_code()};
    }
    if (!attempt.any_running()) {
      attempt.finish_tails();
      return {AttemptEnd::kSucceeded, 0};
    }
    if (g_signal_count.load() != signals_seen) {
      const int signal = g_last_signal.load();
      say("received " + signal_name(signal) + ": forwarding it to the workers");
      stop_workers(attempt, signal, options);
      return {AttemptEnd::kSignalled, attempt.status()};
    }
    sleep_seconds(options.monitor_interval_s);
  }
}

}  // namespace

int run_workers(const LaunchOptions& options) {
  if (!find_executable(options.command.front()))
    throw ArgumentError("cannot execute '" + options.command.front() +
                        "': " + why_not_executable(options.command.front()));
  const bool writes_logs = [&] {
    for (int64_t rank = 0; rank < options.nproc_per_node; ++rank)
      if (options.file_streams(rank) != 0) return true;
    return false;
  }();
  std::optional<fs::path> log_dir;
  if (writes_logs) {
    log_dir = prepare_log_dir(options);
    say("worker logs: " + log_dir->string() + "/attempt_<n>/<local rank>/{stdout,stderr}.log");
  }
  if (sets_default_omp_threads(options))
    say("setting OMP_NUM_THREADS=1 for each worker (it is unset and " +
        std::to_string(options.nproc_per_node) +
        " workers share this node); set it to tune CPU threads per worker");

  Rendezvous rendezvous;
  rendezvous.master_addr = options.master_addr;
  rendezvous.master_port = options.standalone ? pick_free_port() : options.master_port;
  rendezvous.run_id =
      options.standalone && options.run_id == "none" ? random_run_id() : options.run_id;

  SignalCatcher catcher;
  for (;;) {
    const int signals_seen = g_signal_count.load();
    Attempt attempt = start_attempt(options, rendezvous, log_dir);
    const AttemptResult result = monitor(attempt, options, signals_seen);
    if (result.end != AttemptEnd::kWorkerFailed) return result.exit_code;
    if (g_signal_count.load() != signals_seen) return result.exit_code;  // stopped by the user
    if (rendezvous.restart_count >= options.max_restarts) {
      say(options.max_restarts == 0 ? "no restarts allowed (--max-restarts 0); exiting with code " +
                                          std::to_string(result.exit_code)
                                    : "all " + std::to_string(options.max_restarts) +
                                          " restarts used (--max-restarts); exiting with code " +
                                          std::to_string(result.exit_code));
      return result.exit_code;
    }
    ++rendezvous.restart_count;
    say("restarting the workers (restart " + std::to_string(rendezvous.restart_count) + " of " +
        std::to_string(options.max_restarts) +
        ", TORCHELASTIC_RESTART_COUNT=" + std::to_string(rendezvous.restart_count) + ")");
  }
}

}  // namespace ctrainer::launcher
