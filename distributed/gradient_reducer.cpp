#include <ctrainer/distributed/gradient_reducer.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <numeric>
#include <utility>

#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <ATen/core/grad_mode.h>

#include <ctrainer/core/torch_compat.h>

namespace ctrainer {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point begin, Clock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}

struct Bucket {
  at::Tensor flat;  ///< the gradients of `parameters`, back to back
  std::vector<std::size_t> parameters;
  std::size_t ready = 0;  ///< gradients accumulated in the current backward
  PendingCollective work;
  Clock::time_point launched_at;  ///< for ReducerStats::bucket_seconds
};

}  // namespace

struct GradientReducer::State {
  ProcessGroup& group;
  std::vector<at::Tensor> parameters;
  std::vector<std::size_t> bucket_of;  ///< parameter index -> bucket index
  std::vector<Bucket> buckets;
  /// The accumulators are only weakly referenced by their parameters; torch's Reducer keeps
  /// them alive too, otherwise a new accumulator (without our hook) could be created.
  std::vector<compat::AutogradNodeHandle> accumulators;
  GradientReducerOptions options;
  bool warned = false;
  bool sync = false;
  std::size_t next_launch = 0;  ///< buckets launch in index order on every rank (see launch)
  std::mutex mutex;             ///< CUDA backward runs hooks on device threads
  ReducerStats stats;

  State(ProcessGroup& g, const GradientReducerOptions& o) : group(g), options(o) {}

  /// Hook of parameter `index`: its gradient for this backward is accumulated. Without
  /// overlap the count is kept anyway: finalize() uses it to detect unused parameters.
  void mark_ready(std::size_t index) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!sync) return;
    ++buckets[bucket_of[index]].ready;
    if (options.overlap_with_backward) launch_completed_in_order();
  }

  bool complete(const Bucket& bucket) const { return bucket.ready == bucket.parameters.size(); }

  /// Collectives are matched by their launch order, not by their tensor, so every rank must
  /// launch the buckets in the same order even when hooks fire in another (unused parameters
  /// differ between ranks): a completed bucket waits for the buckets before it.
  void launch_completed_in_order() {
    while (next_launch < buckets.size() && complete(buckets[next_launch]))
      launch(buckets[next_launch++]);
  }

  void launch(Bucket& bucket) {
    bucket.launched_at = Clock::now();
    // The average over ranks arrives in place: c10d's AVG (sum, then / world size).
    bucket.work = group.all_reduce_async(bucket.flat, Reduction::kAverage);
  }

  void reset_counters() {
    for (auto& bucket : buckets) bucket.ready = 0;
    next_launch = 0;
  }
};

namespace {

/// Runs after a parameter's AccumulateGrad node has added this backward's gradient into .grad.
class ReadyHook : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(std::weak_ptr<GradientReducer::State> state, std::size_t index)
      : state_(std::move(state)), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    if (auto state = state_.lock()) state->mark_ready(index_);
    return outputs;
  }

 private:
  std::weak_ptr<GradientReducer::State> state_;
  std::size_t index_;
};

}  // namespace

GradientReducer::GradientReducer(ProcessGroup& group, std::vector<at::Tensor> parameters,
                                 const GradientReducerOptions& options)
    : state_(std::make_shared<State>(group, options)) {
  auto& s = *state_;
  s.parameters = std::move(parameters);
  s.bucket_of.assign(s.parameters.size(), 0);

  // Reverse registration order approximates the order backward produces gradients, so the
  // first buckets complete (and start communicating) first.
  std::size_t bytes = 0;
  for (std::size_t k = s.parameters.size(); k-- > 0;) {
    const at::Tensor& p = s.parameters[k];
    const std::size_t nbytes = static_cast<std::size_t>(p.numel()) * p.element_size();
    const std::size_t cap =
        s.buckets.size() <= 1 ? options.first_bucket_bytes : options.bucket_cap_bytes;
    bool fresh = s.buckets.empty() || bytes + nbytes > cap;
    if (!fresh) {
      const at::Tensor& first = s.parameters[s.buckets.back().parameters.front()];
      fresh = first.scalar_type() != p.scalar_type() || first.device() != p.device();
    }
    if (fresh) {
      s.buckets.emplace_back();
      bytes = 0;
    }
    s.buckets.back().parameters.push_back(k);
    s.bucket_of[k] = s.buckets.size() - 1;
    bytes += nbytes;
  }

  at::NoGradGuard no_grad;
  for (auto& bucket : s.buckets) {
    const at::Tensor& first = s.parameters[bucket.parameters.front()];
    int64_t numel = 0;
    for (auto k : bucket.parameters) numel += s.parameters[k].numel();
    bucket.flat = at::zeros({numel}, first.options().requires_grad(false));
    int64_t offset = 0;
    for (auto k : bucket.parameters) {
      at::Tensor& p = s.parameters[k];
      at::Tensor view = bucket.flat.narrow(0, offset, p.numel()).view(p.sizes());
      if (p.grad().defined()) view.copy_(p.grad());
      // AccumulateGrad adds into a defined .grad in place, so it stays this view (row 3b).
      p.mutable_grad() = view;
      offset += p.numel();
    }
  }

  for (std::size_t k = 0; k < s.parameters.size(); ++k) {
    auto accumulator = torch::autograd::impl::grad_accumulator(s.parameters[k]);
    accumulator->add_post_hook(std::make_unique<ReadyHook>(state_, k));
    s.accumulators.push_back(std::move(accumulator));
  }
}

GradientReducer::~GradientReducer() = default;

void GradientReducer::prepare(bool sync) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->reset_counters();
  state_->sync = sync;
}

void GradientReducer::finalize() {
  auto& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.sync) {
    // Buckets still incomplete hold parameters without a gradient in this step; their part
    // of the buffer is what it was (zero after zero_grad), which is what they contribute.
    // Without overlap nothing is lost by reducing them here, so there is nothing to report.
    const auto incomplete = static_cast<std::size_t>(std::count_if(
        s.buckets.begin(), s.buckets.end(), [&](const Bucket& b) { return !s.complete(b); }));
    if (incomplete > 0 && s.options.overlap_with_backward && s.options.warn_on_unused &&
        !s.warned) {
      s.warned = true;
      spdlog::warn(
          "DDP: {} of {} gradient buckets were not complete at the end of backward: some "
          "parameters got no gradient. Results are correct, but those buckets did not overlap "
          "with backward; set ddp_find_unused_parameters if this is expected",
          incomplete, s.buckets.size());
    }
    ReducerStats stats;
    stats.buckets_launched_in_backward = s.next_launch;
    // Exposed time counts only launching and waiting.
    const auto launch_begin = Clock::now();
    while (s.next_launch < s.buckets.size()) s.launch(s.buckets[s.next_launch++]);
    stats.exposed_seconds = seconds_between(launch_begin, Clock::now());
    for (auto& bucket : s.buckets) {
      const auto wait_begin = Clock::now();
      bucket.work.wait();
      const auto done = Clock::now();
      stats.exposed_seconds += seconds_between(wait_begin, done);
      stats.bucket_seconds.push_back(seconds_between(bucket.launched_at, done));
      stats.bucket_bytes.push_back(static_cast<std::size_t>(bucket.flat.numel()) *
                                   bucket.flat.element_size());
    }
    s.stats = std::move(stats);
  }
  s.reset_counters();
  s.sync = false;
}

void GradientReducer::zero_grad() {
  at::NoGradGuard no_grad;
  for (auto& bucket : state_->buckets) bucket.flat.zero_();
}

std::size_t GradientReducer::num_buckets() const {
  return state_->buckets.size();
}

const ReducerStats& GradientReducer::last_stats() const {
  return state_->stats;
}

std::size_t ReducerStats::total_bytes() const {
  return std::accumulate(bucket_bytes.begin(), bucket_bytes.end(), std::size_t{0});
}

}  // namespace ctrainer
