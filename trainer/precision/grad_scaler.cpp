#include <ctrainer/trainer/precision/grad_scaler.h>

#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/torch_compat.h>

namespace ctrainer {
namespace {

constexpr int kStateVersion = 1;
constexpr const char* kUnscaleOp = "aten::_amp_foreach_non_finite_check_and_unscale_";
constexpr const char* kUpdateOp = "aten::_amp_update_scale_";
/// DeepSpeed's DynamicLossScaler scale_factor: its config offers no way to change it.
constexpr double kDeepSpeedScaleFactor = 2.0;

const char* policy_name(GradScalerOptions::Policy policy) {
  return policy == GradScalerOptions::Policy::kTorch ? "torch" : "deepspeed";
}

std::string num(double value) {
  return nlohmann::json(value).dump();
}

/// 0-dim float tensor, 1 when the gradient (its values, for a sparse one) holds an inf or NaN.
/// g * 0 is NaN exactly for inf and NaN entries, and a sum of them stays NaN: one reduction per
/// gradient and no host synchronisation.
at::Tensor non_finite_partial(const at::Tensor& grad) {
  const at::Tensor values = grad.is_sparse() ? grad.coalesce().values() : grad;
  return values.mul(0).sum(at::kFloat);
}

}  // namespace

GradScalerOptions GradScalerOptions::deepspeed() {
  GradScalerOptions options;
  options.policy = Policy::kDeepSpeed;
  return options;
}

void GradScalerOptions::validate() const {
  auto positive = [](const char* name, double value) {
    if (!(value > 0) || !std::isfinite(value))
      throw ArgumentError(std::string("loss scaler: ") + name +
                          " must be a finite number > 0 (got " + num(value) + ")");
  };
  if (policy == Policy::kTorch) {
    positive("init_scale", init_scale);
    if (!(growth_factor > 1.0))
      throw ArgumentError("loss scaler: growth_factor must be > 1 (got " + num(growth_factor) +
                          ")");
    if (!(backoff_factor > 0.0 && backoff_factor < 1.0))
      throw ArgumentError("loss scaler: backoff_factor must be in (0, 1) (got " +
                          num(backoff_factor) + ")");
    if (growth_interval < 1)
      throw ArgumentError("loss scaler: growth_interval must be >= 1 (got " +
                          std::to_string(growth_interval) + ")");
    return;
  }
  if (loss_scale < 0 || !std::isfinite(loss_scale))
    throw ArgumentError("loss scaler: loss_scale must be 0 (dynamic) or a static scale > 0 (got " +
                        num(loss_scale) + ")");
  if (initial_scale_power < 0 || initial_scale_power > 127)
    throw ArgumentError("loss scaler: initial_scale_power must be in [0, 127] (got " +
                        std::to_string(initial_scale_power) + "); the scale is 2^power");
  if (loss_scale_window < 1)
    throw ArgumentError("loss scaler: loss_scale_window must be >= 1 (got " +
                        std::to_string(loss_scale_window) + ")");
  if (hysteresis < 1)
    throw ArgumentError("loss scaler: hysteresis must be >= 1 (got " + std::to_string(hysteresis) +
                        ")");
  positive("min_loss_scale", min_loss_scale);
}

GradScaler::GradScaler(GradScalerOptions options, c10::Device device)
    : options_(options), device_(device) {
  options_.validate();
  fused_ = compat::has_kernel_for(kUnscaleOp, device_.type()) &&
           compat::has_kernel_for(kUpdateOp, device_.type());
  if (options_.policy == GradScalerOptions::Policy::kTorch) {
    scale_ = static_cast<float>(options_.init_scale);
  } else if (is_static()) {
    scale_ = options_.loss_scale;
  } else {
    scale_ = std::ldexp(1.0, static_cast<int>(options_.initial_scale_power));
    cur_hysteresis_ = options_.hysteresis;
  }
  if (fused_ && options_.policy == GradScalerOptions::Policy::kTorch) {
    // torch.amp.GradScaler._lazy_init_scale_growth_tracker: float32 scale, int32 tracker.
    scale_tensor_ = at::full({1}, scale_, at::TensorOptions().dtype(at::kFloat).device(device_));
    growth_tracker_tensor_ = at::zeros({1}, at::TensorOptions().dtype(at::kInt).device(device_));
  }
}

double GradScaler::get_scale() const {
  return scale_tensor_.defined() ? scale_tensor_.item<double>() : scale_;
}

float GradScaler::inverse_scale() const {
  return static_cast<float>(1.0 / get_scale());
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const {
  // torch: outputs * self._scale (a float32 tensor); the device path never synchronises.
  if (scale_tensor_.defined()) return loss * scale_tensor_.to(loss.device()).reshape({});
  return loss * scale_;
}

at::Tensor GradScaler::unscale_(const std::vector<at::Tensor>& params) {
  at::NoGradGuard no_grad;
  const auto flag_options = at::TensorOptions().dtype(at::kFloat).device(device_);
  // torch's _unscale_grads_ groups gradients by device and dtype: the fused kernel needs that.
  std::map<std::pair<std::string, at::ScalarType>, std::vector<at::Tensor>> groups;
  std::vector<at::Tensor> sparse;
  for (const auto& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    const at::Tensor& g = p.grad();
    if (g.is_sparse())
      sparse.push_back(g);
    else
      groups[{g.device().str(), g.scalar_type()}].push_back(g);
  }
  // The host value of 1/scale is read only when a fallback needs it: on the fused path the
  // scale stays on the device and nothing synchronises.
  std::optional<float> host_inv;
  auto inv = [&] {
    if (!host_inv) host_inv = inverse_scale();
    return *host_inv;
  };
  std::vector<at::Tensor> flags;
  for (auto& [key, grads] : groups) {
    const at::Device where = grads.front().device();
    if (fused_ && where.type() == device_.type()) {
      at::Tensor found = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(where));
      // torch: inv_scale = scale.double().reciprocal().float(), computed on the device.
      at::Tensor inv_tensor =
          scale_tensor_.defined()
              ? scale_tensor_.to(where, at::kDouble).reciprocal().to(at::kFloat)
              : at::full({1}, inv(), at::TensorOptions().dtype(at::kFloat).device(where));
      at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv_tensor);
      flags.push_back(found.reshape({}).to(device_));
      continue;
    }
    // Fallback: the check runs on the scaled values, before the multiply, as the kernel does.
    std::vector<at::Tensor> partials;
    partials.reserve(grads.size());
    for (const auto& g : grads) partials.push_back(non_finite_partial(g));
    flags.push_back(at::stack(partials).sum().isnan().to(at::kFloat).to(device_));
    if (inv() != 1.0f) at::_foreach_mul_(grads, inv());
  }
  for (auto& g : sparse) {
    flags.push_back(non_finite_partial(g).isnan().to(at::kFloat).to(device_));
    if (inv() != 1.0f) g.mul_(inv());
  }
  if (flags.empty()) return at::zeros({1}, flag_options);
  return (at::stack(flags).sum() > 0).to(at::kFloat).reshape({1});
}

void GradScaler::update(const at::Tensor& found_inf) {
  if (scale_tensor_.defined()) {
    at::Tensor flag = found_inf.to(scale_tensor_.device(), at::kFloat).reshape({1});
    at::_amp_update_scale_(scale_tensor_, growth_tracker_tensor_, flag, options_.growth_factor,
                           options_.backoff_factor, options_.growth_interval);
    return;
  }
  const bool found = found_inf.item<float>() != 0.0f;
  if (options_.policy == GradScalerOptions::Policy::kTorch)
    update_torch(found);
  else
    update_deepspeed(found);
}

void GradScaler::update_torch(bool found_inf) {
  // The rule of _amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu, and the CPU kernel
  // of 2.x): the scale is a float32 tensor, factors are doubles, growth only to a finite value.
  const auto scale = static_cast<float>(scale_);
  if (found_inf) {
    scale_ = static_cast<float>(static_cast<double>(scale) * options_.backoff_factor);
    growth_tracker_ = 0;
    return;
  }
  const int64_t successful = growth_tracker_ + 1;
  if (successful == options_.growth_interval) {
    const auto grown = static_cast<float>(static_cast<double>(scale) * options_.growth_factor);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  } else {
    growth_tracker_ = successful;
  }
}

void GradScaler::update_deepspeed(bool found_inf) {
  // A static LossScaler's update_scale does nothing; the step is still skipped by the caller.
  if (is_static()) return;
  // DynamicLossScaler.update_scale (deepspeed/runtime/fp16/loss_scaler.py), delayed_shift =
  // hysteresis: with consecutive_hysteresis=false the hysteresis is refilled only when the
  // scale grows, so overflows spread over a window still add up.
  const int64_t delayed_shift = options_.hysteresis;
  if (found_inf) {
    if (delayed_shift == 1 || cur_hysteresis_ == 1) {
      if (scale_ == options_.min_loss_scale && options_.raise_error_at_min_scale)
        throw std::runtime_error(
            "loss scaling: gradients overflowed with the loss scale already at its minimum (" +
            num(options_.min_loss_scale) +
            "); cannot decrease it further (DeepSpeed's rule). Lower min_loss_scale, lower the "
            "learning rate, or train in bf16");
      scale_ = std::max(scale_ / kDeepSpeedScaleFactor, options_.min_loss_scale);
    } else {
      cur_hysteresis_ -= 1;
    }
    last_overflow_iter_ = cur_iter_;
  } else {
    if (options_.consecutive_hysteresis) cur_hysteresis_ = delayed_shift;
    if ((cur_iter_ - last_overflow_iter_) % options_.loss_scale_window == 0) {
      if (!options_.consecutive_hysteresis) cur_hysteresis_ = delayed_shift;
      scale_ *= kDeepSpeedScaleFactor;
    }
  }
  cur_iter_ += 1;
}

nlohmann::json GradScaler::state_dict() const {
  nlohmann::json out = {{"format_version", kStateVersion},
                        {"policy", policy_name(options_.policy)}};
  if (options_.policy == GradScalerOptions::Policy::kTorch) {
    out["scale"] = get_scale();
    out["growth_factor"] = options_.growth_factor;
    out["backoff_factor"] = options_.backoff_factor;
    out["growth_interval"] = options_.growth_interval;
    out["_growth_tracker"] =
        growth_tracker_tensor_.defined() ? growth_tracker_tensor_.item<int64_t>() : growth_tracker_;
    return out;
  }
  out["dynamic"] = !is_static();
  out["cur_scale"] = scale_;
  out["cur_iter"] = cur_iter_;
  out["last_overflow_iter"] = last_overflow_iter_;
  out["cur_hysteresis"] = cur_hysteresis_;
  out["scale_window"] = options_.loss_scale_window;
  out["min_scale"] = options_.min_loss_scale;
  out["delayed_shift"] = options_.hysteresis;
  out["consecutive_hysteresis"] = options_.consecutive_hysteresis;
  out["raise_error_at_min_scale"] = options_.raise_error_at_min_scale;
  return out;
}

void GradScaler::load_state_dict(const nlohmann::json& state) {
  // Integers from the file, checked before the conversion (nlohmann casts 1e300 to an integer,
  // which is undefined); counters stay far from overflowing as training goes on.
  const auto integer = [&](const char* key, int64_t min, int64_t max) {
    const nlohmann::json& value = state.at(key);
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<uint64_t>() > (uint64_t{1} << 62)) ||
        value.get<int64_t>() < min || value.get<int64_t>() > max)
      throw std::runtime_error(std::string("\"") + key + "\" must be an integer in [" +
                               std::to_string(min) + ", " + std::to_string(max) + "], got " +
                               value.dump().substr(0, 80));
    return value.get<int64_t>();
  };
  constexpr int64_t kMaxCount = int64_t{1} << 53;
  try {
    if (!state.at("format_version").is_number_integer() ||
        state.at("format_version").get<int64_t>() != kStateVersion)
      throw std::runtime_error("unsupported format_version " + state.at("format_version").dump());
    const auto policy = state.at("policy").get<std::string>();
    if (policy != policy_name(options_.policy))
      throw std::runtime_error(std::string("it was written by the ") + policy +
                               " loss-scaling policy but this run uses the " +
                               policy_name(options_.policy) +
                               " policy; resume with the same loss-scaling configuration");
    GradScalerOptions options = options_;
    if (options_.policy == GradScalerOptions::Policy::kTorch) {
      options.growth_factor = state.at("growth_factor").get<double>();
      options.backoff_factor = state.at("backoff_factor").get<double>();
      options.growth_interval = integer("growth_interval", 1, kMaxCount);
      options.init_scale = state.at("scale").get<double>();
      options.validate();
      // The scale is a float32 (torch's): 1e300 would become inf.
      if (!std::isfinite(static_cast<float>(options.init_scale)) ||
          !(static_cast<float>(options.init_scale) > 0))
        throw std::runtime_error("scale " + num(options.init_scale) +
                                 " is outside the range of a float32 > 0");
      const auto tracker = integer("_growth_tracker", 0, options.growth_interval - 1);
      options_ = options;
      scale_ = static_cast<float>(options.init_scale);
      growth_tracker_ = tracker;
      if (scale_tensor_.defined()) {
        scale_tensor_.fill_(scale_);
        growth_tracker_tensor_.fill_(tracker);
      }
      return;
    }
    const bool dynamic = state.at("dynamic").get<bool>();
    options.loss_scale = dynamic ? 0.0 : state.at("cur_scale").get<double>();
    options.loss_scale_window = integer("scale_window", 1, kMaxCount);
    options.min_loss_scale = state.at("min_scale").get<double>();
    options.hysteresis = integer("delayed_shift", 1, kMaxCount);
    options.consecutive_hysteresis = state.at("consecutive_hysteresis").get<bool>();
    options.raise_error_at_min_scale = state.at("raise_error_at_min_scale").get<bool>();
    options.validate();
    const auto scale = state.at("cur_scale").get<double>();
    if (!(scale > 0) || !std::isfinite(scale))
      throw std::runtime_error("cur_scale must be a finite number > 0, got " + num(scale));
    const int64_t cur_iter = integer("cur_iter", 0, kMaxCount);
    const int64_t last_overflow_iter = integer("last_overflow_iter", -1, cur_iter);
    const int64_t cur_hysteresis = integer("cur_hysteresis", 1, options.hysteresis);
    options_ = options;
    scale_ = scale;
    cur_iter_ = cur_iter;
    last_overflow_iter_ = last_overflow_iter;
    cur_hysteresis_ = cur_hysteresis;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("loss-scaler state: ") + e.what());
  } catch (const ArgumentError& e) {
    throw std::runtime_error(std::string("loss-scaler state: ") + e.what());
  }
}

}  // namespace ctrainer
