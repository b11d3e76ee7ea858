#pragma once
/// \file Where a training step's time goes: wall-clock timers around the Trainer's phases of a
/// few optimizer steps (--profile_steps), and the time from process start to the first step.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/trainer/runtime/large_buffer_cache.h>

namespace ctrainer {

/// The phases of an optimizer step the Trainer times. Time blocked in collectives is taken out
/// of whichever phase waited and reported as communication; the rest of the step (logging, the
/// scheduler, callbacks, user code outside these phases) is "other".
enum class StepPhase {
  kDataWait,    ///< fetching the window's batches from the data loader
  kForward,     ///< forward and loss (compute_loss inside training_step)
  kBackward,    ///< backward (gradient reduction hooks included)
  kClip,        ///< unscaling, the overflow check and gradient clipping
  kOptimizer,   ///< optimizer step, scheduler step, zeroing the gradients
  kCheckpoint,  ///< writing a checkpoint
  kEvaluation,  ///< an evaluation during training
};
inline constexpr size_t kStepPhaseCount = 7;

/// The phase's name in profile.json ("data_wait", "forward", ...).
const char* step_phase_name(StepPhase phase);

/// Seconds since the Unix epoch when this process started (from /proc/self/stat and the boot
/// time in /proc/stat, 10 ms resolution); 0 when /proc cannot tell.
double process_start_unix_time();

/// Times the phases of optimizer steps 2..steps+1 (step 1 pays one-off costs: first-touch
/// allocations, lazy initialisation) and records when step 1 ended. Scopes opened inside another
/// scope are not counted (an evaluation's forwards belong to the evaluation). Not thread-safe:
/// the training loop's thread only.
class StepProfiler {
 public:
  /// `steps`: how many optimizer steps to time after the first; 0 disables everything (then
  /// measure() and the step hooks cost a branch). `synchronize` (may be empty) runs at every
  /// phase boundary while timing, so that asynchronous device work is charged to the phase that
  /// launched it (CUDA: a device synchronisation). `communication_seconds` (may be empty) is a
  /// monotonic count of seconds blocked in collectives (collective_wait_seconds()).
  StepProfiler(int64_t steps, std::function<void()> synchronize,
               std::function<double()> communication_seconds);

  /// RAII timer of one phase (see measure()).
  class Scope {
   public:
    Scope(Scope&& other) noexcept;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope();

   private:
    friend class StepProfiler;
    Scope(StepProfiler* profiler, StepPhase phase);
    StepProfiler* profiler_;  ///< null when this scope measures nothing
    StepPhase phase_;
    std::chrono::steady_clock::time_point start_;
    double communication_start_ = 0;
  };

  bool enabled() const { return steps_ > 0; }
  /// Times `phase` until the returned scope ends, when the current step is being timed and no
  /// other scope is open.
  [[nodiscard]] Scope measure(StepPhase phase);
  /// Before the step's first batch is fetched; `step` is the optimizer step about to run (1-based).
  void begin_step(int64_t step);
  /// After the step, its logging, evaluation and checkpoint included. Returns true exactly once:
  /// when the last timed step ended (the report is complete).
  bool end_step(int64_t step);
  /// Whether end_step already returned true.
  bool complete() const { return complete_; }
  /// {"profile_steps", "profiled_steps", "first_profiled_step", "step_ms",
  ///  "phases_ms_per_step": {<phase>..., "communication", "other"}, "first_step_ms",
  ///  "first_optimizer_step_unix_time", "process_start_unix_time",
  ///  "process_start_to_first_step_s", and "large_buffer_cache": {"hits", "misses",
  ///  "evictions" over the timed steps, "peak_live_mb", "cached_mb"} when the cache is
  ///  installed}; per-step values are means over the timed steps.
  nlohmann::json report() const;
  /// The report as log lines: one line per phase with ms per step and share of the step.
  std::string summary() const;

 private:
  void finish_scope(StepPhase phase, std::chrono::steady_clock::time_point start,
                    double communication_start);
  double communication() const { return communication_seconds_ ? communication_seconds_() : 0; }

  int64_t steps_;
  std::function<void()> synchronize_;
  std::function<double()> communication_seconds_;
  bool timing_ = false;
  bool in_scope_ = false;
  bool complete_ = false;
  int64_t profiled_steps_ = 0;
  std::chrono::steady_clock::time_point step_start_;
  double step_communication_start_ = 0;
  std::array<double, kStepPhaseCount> phase_seconds_{};
  double communication_seconds_total_ = 0;
  double step_seconds_total_ = 0;
  double first_step_seconds_ = 0;
  double first_step_unix_time_ = 0;
  LargeBufferCacheStats cache_at_first_timed_step_;  ///< to count the timed steps' hits/misses
};

}  // namespace ctrainer
