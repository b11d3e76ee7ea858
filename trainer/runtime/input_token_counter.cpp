#include <ctrainer/trainer/runtime/input_token_counter.h>

#include <cmath>

#include <ctrainer/core/logging.h>

namespace ctrainer {

void InputTokenCounter::start(const at::Device& device) {
  pending_ = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(device));
}

void InputTokenCounter::count(const Batch& batch) {
  if (!enabled()) return;
  if (!batch.contains("input_ids")) {
    if (!warned_)
      logging::logger()->warn(
          "include_num_input_tokens_seen: the batches have no input_ids, so no tokens are counted");
    warned_ = true;
    return;
  }
  const at::Tensor& ids = batch.at("input_ids");
  if (!pending_.defined()) start(ids.device());
  if (mode_ == InputTokensSeen::kNonPadding && batch.contains("attention_mask")) {
    pending_.add_(batch.at("attention_mask").sum().to(at::kDouble));
    return;
  }
  if (mode_ == InputTokensSeen::kNonPadding && !warned_) {
    logging::logger()->warn(
        "include_num_input_tokens_seen non_padding: the batches have no attention_mask; counting "
        "all tokens");
    warned_ = true;
  }
  pending_.add_(static_cast<double>(ids.numel()));
}

void InputTokenCounter::add_pending_to(Strategy& strategy, int64_t& seen) {
  if (!enabled()) return;
  if (!pending_.defined()) start(at::kCPU);  // outside a training run: nothing was counted
  // Every rank joins the reduction, also one that has counted nothing yet.
  const double mean = strategy.mean_across_processes(pending_).item<double>();
  seen += std::llround(mean * static_cast<double>(strategy.world_size()));
  pending_.zero_();
}

}  // namespace ctrainer
