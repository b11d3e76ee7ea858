#include <ctrainer/core/logging.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace ctrainer::logging {
namespace {

constexpr const char* kLoggerName = "ctrainer";

std::atomic<spdlog::level::level_enum> g_verbosity{spdlog::level::warn};

struct State {
  std::mutex mutex;
  std::shared_ptr<spdlog::logger> logger;
  // False while the logger is the default one created by logger(): set_verbosity() then also
  // moves its level, as HF's set_verbosity moves the library logger's.
  bool configured = false;
};

State& state() {
  // Leaked on purpose: code running in static destructors may still log.
  static State* s = new State();
  return *s;
}

std::shared_ptr<spdlog::logger> make_logger(int64_t rank, spdlog::level::level_enum level,
                                            spdlog::sink_ptr sink) {
  if (!sink) sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto lg = std::make_shared<spdlog::logger>(kLoggerName, std::move(sink));
  lg->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [rank " + std::to_string(rank) + "] [%l] %v");
  lg->set_level(level);
  // Warnings and errors must reach the terminal/file even if the process dies right after.
  lg->flush_on(spdlog::level::warn);
  return lg;
}

// Caller holds state().mutex.
void install(State& s, std::shared_ptr<spdlog::logger> lg, bool configured) {
  s.logger = std::move(lg);
  s.configured = configured;
  // Let other code find it with spdlog::get("ctrainer"); replace a previous registration.
  spdlog::drop(kLoggerName);
  spdlog::register_logger(s.logger);
}

}  // namespace

void set_verbosity(spdlog::level::level_enum level) {
  g_verbosity.store(level);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.logger && !s.configured) s.logger->set_level(level);
}

spdlog::level::level_enum get_verbosity() {
  return g_verbosity.load();
}

void configure(int64_t rank, spdlog::level::level_enum level, spdlog::sink_ptr sink) {
  auto lg = make_logger(rank, level, std::move(sink));
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  install(s, std::move(lg), /*configured=*/true);
}

std::shared_ptr<spdlog::logger> logger() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.logger) install(s, make_logger(0, get_verbosity(), nullptr), /*configured=*/false);
  return s.logger;
}

}  // namespace ctrainer::logging
