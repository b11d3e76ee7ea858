#pragma once
/// \file GradScaler: loss scaling for float16 training. The loss is multiplied by a scale before
/// backward so small gradients do not underflow in float16; before the optimizer step the
/// gradients are divided by it again and checked for inf/NaN, and a step whose gradients
/// overflowed is skipped. How the scale evolves follows PyTorch (torch.amp.GradScaler) or
/// DeepSpeed (deepspeed/runtime/fp16/loss_scaler.py: DynamicLossScaler, or a static LossScaler).
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json_fwd.hpp>

namespace ctrainer {

/// How the loss scale starts and evolves. Defaults are PyTorch's and DeepSpeed's.
struct GradScalerOptions {
  enum class Policy {
    /// torch.amp.GradScaler: on overflow scale *= backoff_factor at once; after growth_interval
    /// consecutive clean steps scale *= growth_factor.
    kTorch,
    /// DeepSpeed's fp16 loss scaler: `hysteresis` overflows are absorbed before the scale is
    /// halved, never below min_loss_scale; it doubles every loss_scale_window steps without
    /// overflow. With loss_scale > 0 the scale is static (overflowing steps are still skipped).
    kDeepSpeed,
  };
  Policy policy = Policy::kTorch;

  // ---- torch.amp.GradScaler constructor defaults ----
  double init_scale = 65536.0;  ///< 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;

  // ---- the "fp16" section of a DeepSpeed config (deepspeed/runtime/constants.py defaults) ----
  /// The dynamic scale starts at 2^initial_scale_power.
  int64_t initial_scale_power = 16;
  /// Clean steps between two doublings of the scale (DynamicLossScaler's scale_window).
  int64_t loss_scale_window = 1000;
  /// Overflows absorbed before the scale drops (DynamicLossScaler's delayed_shift).
  int64_t hysteresis = 2;
  /// Refill the hysteresis after every clean step instead of only when the scale grows.
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1.0;
  /// > 0: a static scale that never changes; 0: dynamic scaling.
  double loss_scale = 0.0;
  /// DynamicLossScaler raises when an overflow happens with the scale already at its minimum.
  bool raise_error_at_min_scale = true;

  /// DeepSpeed's policy with DeepSpeed's defaults.
  static GradScalerOptions deepspeed();
  /// Throws ArgumentError naming the bad option.
  void validate() const;
};

/// Dynamic (or static) loss scaling. Use per optimizer step:
///   backward(scaler.scale(loss)); found = scaler.unscale_(params);  // then clip
///   skip = found.item<float>() != 0;  if (!skip) optimizer.step();  scaler.update(found);
/// With several processes, all-reduce `found` before reading it so every rank skips alike.
/// Where this libtorch build has the fused kernels for the device
/// (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_: CUDA; CPU in 2.x) they are
/// used and the scale stays on the device; otherwise a portable fallback computes the same
/// result.
class GradScaler {
 public:
  /// `device`: where the gradients live.
  explicit GradScaler(GradScalerOptions options = {}, c10::Device device = c10::Device(c10::kCPU));

  const GradScalerOptions& options() const { return options_; }
  /// `loss` multiplied by the current scale.
  at::Tensor scale(const at::Tensor& loss) const;
  /// Divides every defined gradient of `params` by the scale, in place, and returns a
  /// one-element float tensor on the scaler's device: 1 when any gradient held an inf or NaN
  /// before unscaling, else 0. No host synchronisation.
  at::Tensor unscale_(const std::vector<at::Tensor>& params);
  /// Advances the scale after a step whose (all-reduced) overflow flag is `found_inf`.
  /// DeepSpeed policy: throws std::runtime_error on an overflow at the minimum scale (as
  /// DeepSpeed does, unless raise_error_at_min_scale is false).
  void update(const at::Tensor& found_inf);
  /// The current scale (a host synchronisation on the fused-kernel path).
  double get_scale() const;
  /// Whether unscale_/update use the fused ATen kernels (else the portable fallback).
  bool uses_fused_kernels() const { return fused_; }

  /// The scaling state and its settings. Torch policy: torch's GradScaler.state_dict() keys
  /// (scale, growth_factor, backoff_factor, growth_interval, _growth_tracker); DeepSpeed policy:
  /// the fields of its DynamicLossScaler. Both with "policy" and "format_version".
  nlohmann::json state_dict() const;
  /// Restores state_dict() output. Like torch's load_state_dict (and DeepSpeed's pickled
  /// scaler), the saved settings replace the current ones. Throws std::runtime_error on a
  /// malformed state or one written by the other policy.
  void load_state_dict(const nlohmann::json& state);

 private:
  bool is_static() const {
    return options_.policy == GradScalerOptions::Policy::kDeepSpeed && options_.loss_scale > 0;
  }
  void update_torch(bool found_inf);
  void update_deepspeed(bool found_inf);
  /// 1/scale as torch computes it: in double, then rounded to float.
  float inverse_scale() const;

  GradScalerOptions options_;
  c10::Device device_;
  /// The fused kernels exist for device_ (and the torch policy, whose rule they implement).
  bool fused_ = false;

  // Host state (fallback path and the DeepSpeed policy). Torch's scale is a float32 tensor,
  // so the torch policy rounds it to float after every change, as its kernel does.
  double scale_ = 1.0;
  int64_t growth_tracker_ = 0;
  // DeepSpeed's DynamicLossScaler counters.
  int64_t cur_iter_ = 0;
  int64_t last_overflow_iter_ = -1;
  int64_t cur_hysteresis_ = 1;

  // Device state of the fused path: float32 scale and int32 growth tracker, one element each.
  at::Tensor scale_tensor_;
  at::Tensor growth_tracker_tensor_;
};

}  // namespace ctrainer
