#include <ctrainer/distributed/launcher/worker_group.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include <ctrainer/core/errors.h>

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

std::string who(const WorkerProcess& worker) {
  return "rank " + std::to_string(worker.rank()) + " (local " +
         std::to_string(worker.local_rank()) + ", pid " + std::to_string(worker.pid()) + ")";
}

void sleep_seconds(double seconds) {
  // A signal interrupts the sleep, so forwarding starts at once.
  timespec duration{
      static_cast<time_t>(seconds),
      static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9)};
  ::nanosleep(&duration, nullptr);
}

}  // namespace

void say(const std::string& text) {
  std::fprintf(stderr, "[ctrainer-run] %s\n", text.c_str());
  std::fflush(stderr);
}

std::string signal_name(int signal) {
  const char* abbreviation = ::sigabbrev_np(signal);
  return abbreviation != nullptr ? "SIG" + std::string(abbreviation) : std::to_string(signal);
}

struct SignalCatcher::Saved {
  struct sigaction previous[std::size(kForwardedSignals)]{};
};

SignalCatcher::SignalCatcher() : saved_(std::make_unique<Saved>()) {
  struct sigaction action {};
  action.sa_handler = on_launcher_signal;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
    ::sigaction(kForwardedSignals[i], &action, &saved_->previous[i]);
}

SignalCatcher::~SignalCatcher() {
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
    ::sigaction(kForwardedSignals[i], &saved_->previous[i], nullptr);
}

int signals_received() {
  return g_signal_count.load();
}
int last_signal() {
  return g_last_signal.load();
}

int pick_free_port(const std::string& address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in bound{};
  bound.sin_family = AF_INET;
  bound.sin_port = 0;
  if (::inet_pton(AF_INET, address.c_str(), &bound.sin_addr) != 1) {
    ::close(fd);
    throw ArgumentError("'" + address + "' is not an IPv4 address of this machine");
  }
  socklen_t length = sizeof bound;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&bound), sizeof bound) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok) throw std::runtime_error("no free port on " + address + ": " + std::strerror(error));
  return ntohs(bound.sin_port);
}

namespace {

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

}  // namespace

std::optional<fs::path> prepare_workers(const LaunchOptions& options) {
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
  return log_dir;
}

WorkerGroup::WorkerGroup(const LaunchOptions& options, const Rendezvous& rendezvous,
                         const std::optional<fs::path>& log_dir, int64_t attempt)
    : options_(options) {
  for (int64_t local_rank = 0; local_rank < options_.nproc_per_node; ++local_rank) {
    WorkerSpec spec;
    spec.local_rank = local_rank;
    spec.rank = options_.node_rank * options_.nproc_per_node + local_rank;
    spec.command = options_.command;
    spec.environment = worker_environment(options_, rendezvous, local_rank);
    const unsigned files = options_.file_streams(local_rank);
    const bool shown = options_.shown_on_console(local_rank);
    const unsigned tee = local_rank < static_cast<int64_t>(options_.tee.size())
                             ? options_.tee[static_cast<size_t>(local_rank)]
                             : 0u;
    fs::path folder;
    if (log_dir) {
      // torchrun's layout: <log dir>/attempt_<n>/<local rank>/{stdout,stderr}.log
      folder = *log_dir / ("attempt_" + std::to_string(attempt)) / std::to_string(local_rank);
      fs::create_directories(folder);
    }
    const std::string prefix = "[" + options_.role + std::to_string(local_rank) + "]:";
    const auto route = [&](unsigned stream, std::string& path, const char* file, int console) {
      if (files & stream) {
        path = (folder / file).string();
        std::error_code ignored;
        fs::remove(path, ignored);  // a rerun into the same --log-dir starts fresh files
        if ((tee & stream) && shown) tails_.emplace_back(path, prefix, console);
      } else if (!shown) {
        path = "/dev/null";
      }
    };
    route(kStdout, spec.stdout_path, "stdout.log", 1);
    route(kStderr, spec.stderr_path, "stderr.log", 2);
    workers_.push_back(std::make_unique<WorkerProcess>(spec));
  }
}

WorkerGroup::~WorkerGroup() = default;

bool WorkerGroup::any_running() const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [](const auto& worker) { return worker->running(); });
}

int WorkerGroup::status() const {
  for (const auto& worker : workers_)
    if (worker->exit() && !worker->exit()->succeeded()) return worker->exit()->shell_code();
  return 0;
}

/// Sends `signal` to every running worker, then SIGKILL to those still running after the grace
/// period (or at once when another signal reaches the launcher). Waits for all of them.
void WorkerGroup::stop(int signal) {
  for (auto& worker : workers_) worker->signal(signal);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.grace_period_s));
  const int signals_before = signals_received();
  bool killed = false;
  while (true) {
    for (auto& tail : tails_) tail.poll();
    for (auto& worker : workers_) {
      if (worker->running() && !worker->poll())
        say(who(*worker) + " stopped: " + worker->exit()->describe());
    }
    if (!any_running()) break;
    if (!killed && (Clock::now() >= deadline || signals_received() != signals_before)) {
      for (auto& worker : workers_)
        if (worker->running()) {
          say(who(*worker) + " did not stop after " + signal_name(signal) + ": sending SIGKILL");
          worker->signal(SIGKILL);
        }
      killed = true;
    }
    sleep_seconds(std::min(0.05, options_.monitor_interval_s));
  }
  for (auto& tail : tails_) tail.finish();
}

GroupResult WorkerGroup::watch(int signals_seen, const std::function<bool()>& membership_changed) {
  while (true) {
    for (auto& tail : tails_) tail.poll();
    std::vector<const WorkerProcess*> failed;
    for (auto& worker : workers_)
      if (worker->running() && !worker->poll() && !worker->exit()->succeeded())
        failed.push_back(worker.get());
    if (!failed.empty()) {
      for (const WorkerProcess* worker : failed)
        say(who(*worker) + " failed: " + worker->exit()->describe());
      if (any_running()) say("stopping the other workers");
      stop(SIGTERM);
      return {GroupEnd::kWorkerFailed, failed.front()->exit()->shell_code()};
    }
    if (!any_running()) {
      for (auto& tail : tails_) tail.finish();
      return {GroupEnd::kSucceeded, 0};
    }
    if (signals_received() != signals_seen) {
      const int signal = last_signal();
      say("received " + signal_name(signal) + ": forwarding it to the workers");
      stop(signal);
      return {GroupEnd::kSignalled, status()};
    }
    if (membership_changed && membership_changed()) {
      say("the job's nodes changed: stopping the workers with SIGTERM (they save a checkpoint "
          "and exit) to restart them in the new layout");
      stop(SIGTERM);
      return {GroupEnd::kMembershipChanged, 0};
    }
    sleep_seconds(options_.monitor_interval_s);
  }
}

}  // namespace ctrainer::launcher
