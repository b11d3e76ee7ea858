#include <ctrainer/trainer/runtime/step_profiler.h>

#include <unistd.h>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace ctrainer {
namespace {

double seconds_between(std::chrono::steady_clock::time_point start,
                       std::chrono::steady_clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

double unix_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

const char* step_phase_name(StepPhase phase) {
  switch (phase) {
    case StepPhase::kDataWait:
      return "data_wait";
    case StepPhase::kForward:
      return "forward";
    case StepPhase::kBackward:
      return "backward";
    case StepPhase::kClip:
      return "clip";
    case StepPhase::kOptimizer:
      return "optimizer";
    case StepPhase::kCheckpoint:
      return "checkpoint";
    case StepPhase::kEvaluation:
      return "evaluation";
  }
  return "unknown";
}

double process_start_unix_time() {
  // Field 22 of /proc/self/stat: start time in clock ticks after boot. The command name (field
  // 2) is in parentheses and may contain spaces, so fields are counted after the last ')'.
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));  // starts at field 3
  std::string field;
  for (int index = 3; index <= 22 && fields >> field; ++index) {
    if (index < 22) continue;
    std::ifstream proc_stat("/proc/stat");
    std::string key;
    double boot_time = 0;
    while (proc_stat >> key) {
      if (key == "btime") {
        proc_stat >> boot_time;
        break;
      }
    }
    const long ticks_per_second = sysconf(_SC_CLK_TCK);
    if (boot_time <= 0 || ticks_per_second <= 0) return 0;
    return boot_time + std::stod(field) / static_cast<double>(ticks_per_second);
  }
  return 0;
}

StepProfiler::StepProfiler(int64_t steps, std::function<void()> synchronize,
                           std::function<double()> communication_seconds)
    : steps_(steps),
      synchronize_(std::move(synchronize)),
      communication_seconds_(std::move(communication_seconds)) {}

StepProfiler::Scope::Scope(StepProfiler* profiler, StepPhase phase)
    : profiler_(profiler), phase_(phase) {
  if (!profiler_) return;
  if (profiler_->synchronize_) profiler_->synchronize_();
  profiler_->in_scope_ = true;
  communication_start_ = profiler_->communication();
  start_ = std::chrono::steady_clock::now();
}

StepProfiler::Scope::Scope(Scope&& other) noexcept
    : profiler_(std::exchange(other.profiler_, nullptr)),
      phase_(other.phase_),
      start_(other.start_),
      communication_start_(other.communication_start_) {}

StepProfiler::Scope::~Scope() {
  if (profiler_) profiler_->finish_scope(phase_, start_, communication_start_);
}

StepProfiler::Scope StepProfiler::measure(StepPhase phase) {
  return Scope(timing_ && !in_scope_ ? this : nullptr, phase);
}

void StepProfiler::finish_scope(StepPhase phase, std::chrono::steady_clock::time_point start,
                                double communication_start) {
  if (synchronize_) synchronize_();
  const double elapsed = seconds_between(start, std::chrono::steady_clock::now());
  const double blocked = communication() - communication_start;
  phase_seconds_[static_cast<size_t>(phase)] += elapsed - blocked;
  communication_seconds_total_ += blocked;
  in_scope_ = false;
}

void StepProfiler::begin_step(int64_t step) {
  if (!enabled() || complete_) return;
  // Step 1 is timed as a whole (first_step_ms), its phases are not.
  timing_ = step >= 2 && step <= steps_ + 1;
  if (synchronize_ && (timing_ || step == 1)) synchronize_();
  step_start_ = std::chrono::steady_clock::now();
  step_communication_start_ = communication();
  if (step == 2 && installed_large_buffer_cache() != nullptr)
    cache_at_first_timed_step_ = installed_large_buffer_cache()->stats();
}

bool StepProfiler::end_step(int64_t step) {
  if (!enabled() || complete_) return false;
  if (step == 1) {
    if (synchronize_) synchronize_();
    first_step_seconds_ = seconds_between(step_start_, std::chrono::steady_clock::now());
    first_step_unix_time_ = unix_time_now();
  }
  if (!timing_) return false;
  if (synchronize_) synchronize_();
  step_seconds_total_ += seconds_between(step_start_, std::chrono::steady_clock::now());
  ++profiled_steps_;
  timing_ = false;
  if (step < steps_ + 1) return false;
  complete_ = true;
  return true;
}

nlohmann::json StepProfiler::report() const {
  const double n = profiled_steps_ > 0 ? static_cast<double>(profiled_steps_) : 1.0;
  nlohmann::json phases = nlohmann::json::object();
  double accounted = communication_seconds_total_;
  for (size_t i = 0; i < kStepPhaseCount; ++i) {
    phases[step_phase_name(static_cast<StepPhase>(i))] = phase_seconds_[i] * 1e3 / n;
    accounted += phase_seconds_[i];
  }
  phases["communication"] = communication_seconds_total_ * 1e3 / n;
  phases["other"] = (step_seconds_total_ - accounted) * 1e3 / n;
  const double process_start = process_start_unix_time();
  nlohmann::json out = {
      {"profile_steps", steps_},
      {"profiled_steps", profiled_steps_},
      {"first_profiled_step", 2},
      {"step_ms", step_seconds_total_ * 1e3 / n},
      {"phases_ms_per_step", phases},
      {"first_step_ms", first_step_seconds_ * 1e3},
      {"first_optimizer_step_unix_time", first_step_unix_time_},
      {"process_start_unix_time", process_start},
  };
  out["process_start_to_first_step_s"] = process_start > 0 && first_step_unix_time_ > 0
                                             ? nlohmann::json(first_step_unix_time_ - process_start)
                                             : nlohmann::json(nullptr);
  if (const LargeBufferCache* cache = installed_large_buffer_cache()) {
    // A training loop that repeats its allocations should miss nothing after its first step.
    const LargeBufferCacheStats now = cache->stats();
    const LargeBufferCacheStats& start = cache_at_first_timed_step_;
    out["large_buffer_cache"] = {
        {"hits", now.hits - start.hits},
        {"misses", now.misses - start.misses},
        {"evictions", now.evictions - start.evictions},
        {"peak_live_mb", static_cast<double>(now.peak_live_bytes) / (1 << 20)},
        {"cached_mb", static_cast<double>(now.cached_bytes) / (1 << 20)},
    };
  }
  return out;
}

std::string StepProfiler::summary() const {
  const nlohmann::json r = report();
  const double step_ms = r["step_ms"].get<double>();
  std::string text = fmt::format("step profile: {:.2f} ms per step over steps 2..{} ({} timed)",
                                 step_ms, profiled_steps_ + 1, profiled_steps_);
  std::vector<std::string> names;
  for (size_t i = 0; i < kStepPhaseCount; ++i) names.push_back(step_phase_name(StepPhase(i)));
  names.insert(names.begin() + static_cast<std::ptrdiff_t>(StepPhase::kCheckpoint),
               "communication");
  names.push_back("other");
  for (const std::string& name : names) {
    const double ms = r["phases_ms_per_step"][name].get<double>();
    text += fmt::format("\n  {:<13} {:9.2f} ms  {:5.1f}%", name, ms,
                        step_ms > 0 ? 100.0 * ms / step_ms : 0.0);
  }
  text += fmt::format("\n  first step {:.1f} ms", r["first_step_ms"].get<double>());
  if (!r["process_start_to_first_step_s"].is_null())
    text += fmt::format(", {:.2f} s after the process started",
                        r["process_start_to_first_step_s"].get<double>());
  return text;
}

}  // namespace ctrainer
