#include <ctrainer/trainer/callbacks/progress_callback.h>

#include <unistd.h>

#include <cmath>

#include <fmt/format.h>

namespace ctrainer {
namespace {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

std::string format_value(const nlohmann::json& v) {
  if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
  // fmt rather than operator+ on a temporary: GCC 12 warns (-Wstringop-overflow) on the latter.
  if (v.is_string()) return fmt::format("'{}'", v.get_ref<const std::string&>());
  return v.dump();
}

}  // namespace

std::string format_log_line(const nlohmann::json& logs, int64_t rank) {
  std::string body;
  for (const auto& [key, value] : logs.items()) {
    if (key == "total_flos") continue;
    body += fmt::format("{}'{}': {}", body.empty() ? "" : ", ", key, format_value(value));
  }
  return fmt::format("[rank {}] {{{}}}", rank, body);
}

ProgressCallback::ProgressCallback(std::FILE* progress_stream, std::FILE* log_stream)
    : ProgressCallback(progress_stream, log_stream, ::isatty(::fileno(progress_stream)) == 1) {}

ProgressCallback::ProgressCallback(std::FILE* progress_stream, std::FILE* log_stream,
                                   bool interactive)
    : progress_(progress_stream), log_(log_stream), interactive_(interactive) {}

void ProgressCallback::on_train_begin(Args, TrainerState& state, TrainerControl&, Ctx) {
  active_ = state.is_world_process_zero;
  start_ = last_draw_ = std::chrono::steady_clock::now();
  start_step_ = state.global_step;
  next_plain_step_ = state.global_step;
}

void ProgressCallback::render(const TrainerState& state, bool final) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const int64_t done = state.global_step - start_step_;
  const double rate = elapsed > 0 ? done / elapsed : 0.0;
  const int64_t total = std::max<int64_t>(state.max_steps, 1);
  const double eta = rate > 0 ? (state.max_steps - state.global_step) / rate : NAN;
  const int pct = static_cast<int>(100.0 * state.global_step / total);
  if (interactive_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * state.global_step / total);
    std::string bar(static_cast<size_t>(std::clamp(filled, 0, kWidth)), '#');
    bar.resize(kWidth, ' ');
    fmt::print(progress_, "\r{:3}%|{}| {}/{} [{}<{}, {:.2f}it/s]{}", pct, bar, state.global_step,
               state.max_steps, format_duration(elapsed), format_duration(eta), rate,
               final ? "\n" : "");
  } else {
    fmt::print(progress_, "[rank 0] progress: step {}/{} ({}%), {:.2f} it/s, elapsed {}, ETA {}\n",
               state.global_step, state.max_steps, pct, rate, format_duration(elapsed),
               format_duration(eta));
  }
  std::fflush(progress_);
  last_draw_ = now;
}

void ProgressCallback::on_step_end(Args, TrainerState& state, TrainerControl&, Ctx) {
  if (!active_) return;
  if (interactive_) {
    // Redraw at most ~10 times a second: the bar must never cost training time.
    const auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ > std::chrono::milliseconds(100) || state.global_step >= state.max_steps)
      render(state, false);
  } else if (state.global_step >= next_plain_step_) {
    render(state, false);
    next_plain_step_ = state.global_step + std::max<int64_t>(1, state.max_steps / 10);
  }
}

void ProgressCallback::on_log(Args, TrainerState& state, TrainerControl&, Ctx ctx) {
  if (!state.is_world_process_zero || ctx.logs == nullptr) return;
  if (active_ && interactive_) fmt::print(progress_, "\r\033[K");  // clear the bar line first
  fmt::print(log_, "{}\n", format_log_line(*ctx.logs, 0));
  std::fflush(log_);
}

void ProgressCallback::on_train_end(Args, TrainerState& state, TrainerControl&, Ctx) {
  if (!active_) return;
  render(state, true);
  active_ = false;
}

void PrinterCallback::on_log(Args, TrainerState& state, TrainerControl&, Ctx ctx) {
  if (!state.is_world_process_zero || ctx.logs == nullptr) return;
  fmt::print(log_, "{}\n", format_log_line(*ctx.logs, 0));
  std::fflush(log_);
}

}  // namespace ctrainer
