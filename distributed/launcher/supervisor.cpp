#include <ctrainer/distributed/launcher/supervisor.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher/worker_group.h>

namespace ctrainer::launcher {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

int run_workers(const LaunchOptions& options) {
  const std::optional<fs::path> log_dir = prepare_workers(options);

  Rendezvous rendezvous;
  rendezvous.master_addr = options.master_addr;
  rendezvous.master_port = options.standalone ? pick_free_port() : options.master_port;
  rendezvous.run_id =
      options.standalone && options.run_id == "none" ? random_run_id() : options.run_id;

  SignalCatcher catcher;
  for (;;) {
    const int signals_seen = signals_received();
    WorkerGroup group(options, rendezvous, log_dir, rendezvous.restart_count);
    const GroupResult result = group.watch(signals_seen);
    if (result.end != GroupEnd::kWorkerFailed) return result.exit_code;
    if (signals_received() != signals_seen) return result.exit_code;  // stopped by the user
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
