#include <ctrainer/trainer/precision/precision.h>

#include <ATen/Context.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/logging.h>
#include <ctrainer/distributed/cuda_support.h>
#include <ctrainer/distributed/strategy.h>
#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {
namespace {

/// Compute capability >= 8.0 (Ampere): what torch.cuda.is_bf16_supported() and HF's
/// is_torch_tf32_available() require. Always false without CUDA.
bool is_ampere_or_newer(const c10::Device& device) {
  if (!device.is_cuda()) return false;
  const auto index = device.has_index() ? device.index() : c10::DeviceIndex(0);
  return require_cuda_support("a CUDA device").compute_capability_major(index) >= 8;
}

const char* dtype_name(at::ScalarType dtype) {
  return dtype == at::kHalf ? "fp16" : dtype == at::kBFloat16 ? "bf16" : "fp32";
}

}  // namespace

Precision::Precision(PrecisionOptions options, const c10::Device& device)
    : options_(std::move(options)), device_type_(device.type()) {
  const bool cpu = device.is_cpu();
  if (!cpu && !device.is_cuda())
    throw ArgumentError("mixed precision: unsupported device " + device.str() +
                        " (CPU and CUDA only)");
  // float16 mixed precision is a GPU recipe: on the CPU, bfloat16 has fp32's range (no loss
  // scaling) and the fast kernels (AVX512-BF16/AMX), so an fp16 request there is refused with a
  // pointer to --bf16 rather than run slowly.
  if (cpu && options_.mixed == MixedPrecision::kFp16)
    throw ArgumentError(
        "--fp16: float16 mixed precision needs a CUDA device, and this run is on the CPU; use "
        "--bf16 for mixed precision on the CPU");
  if (options_.parameter_dtype && options_.mixed != MixedPrecision::kNo)
    throw std::invalid_argument("PrecisionOptions: 16-bit parameters exclude autocast");
  if (cpu && options_.parameter_dtype == at::kHalf)
    throw ArgumentError(
        "--deepspeed config: fp16.enabled: float16 parameters need a CUDA device, and this run is "
        "on the CPU; use bf16.enabled (or --bf16) on the CPU");
  if (cpu && options_.full_eval_dtype == at::kHalf)
    throw ArgumentError(
        "--fp16_full_eval: float16 evaluation needs a CUDA device, and this run is on the CPU; "
        "use --bf16_full_eval to evaluate in reduced precision on the CPU");
  const bool wants_bf16 =
      options_.mixed == MixedPrecision::kBf16 || options_.full_eval_dtype == at::kBFloat16;
  if (device.is_cuda() && wants_bf16 && !is_ampere_or_newer(device))
    throw ArgumentError(
        "--bf16 / --bf16_full_eval: this GPU does not support bfloat16 (compute capability 8.0, "
        "Ampere, or newer is needed); use --fp16");
  if (options_.full_eval_dtype && *options_.full_eval_dtype != at::kHalf &&
      *options_.full_eval_dtype != at::kBFloat16)
    throw ArgumentError("full evaluation dtype must be float16 or bfloat16");
  if (options_.loss_scaling) scaler_ = std::make_unique<GradScaler>(*options_.loss_scaling, device);
}

std::shared_ptr<Precision> Precision::from_args(
    const TrainingArguments& args, const c10::Device& device,
    const std::optional<GradScalerOptions>& fp16_loss_scaling,
    std::optional<at::ScalarType> parameter_dtype) {
  if (args.half_precision_backend == HalfPrecisionBackend::kCpuAmp && !device.is_cpu())
    throw ArgumentError("--half_precision_backend cpu_amp: this run is on " + device.str() +
                        ", not the CPU; use --half_precision_backend auto");
  PrecisionOptions options;
  if (args.fp16) {
    options.mixed = MixedPrecision::kFp16;
    // HF creates torch's GradScaler with its defaults for fp16 (accelerate does the same).
    options.loss_scaling = fp16_loss_scaling.value_or(GradScalerOptions{});
  } else if (args.bf16) {
    options.mixed = MixedPrecision::kBf16;  // bfloat16 has fp32's range: no loss scaling
  }
  if (parameter_dtype) {
    // The model computes in its own 16-bit dtype: autocast would only add casts.
    options.mixed = MixedPrecision::kNo;
    options.parameter_dtype = parameter_dtype;
  }
  if (args.fp16_full_eval)
    options.full_eval_dtype = at::kHalf;
  else if (args.bf16_full_eval)
    options.full_eval_dtype = at::kBFloat16;
  return std::make_shared<Precision>(std::move(options), device);
}

std::optional<at::ScalarType> Precision::autocast_dtype() const {
  switch (options_.mixed) {
    case MixedPrecision::kFp16:
      return at::kHalf;
    case MixedPrecision::kBf16:
      return at::kBFloat16;
    case MixedPrecision::kNo:
      break;
  }
  return std::nullopt;
}

at::Tensor Precision::scale_loss(const at::Tensor& loss) const {
  return scaler_ ? scaler_->scale(loss) : loss;
}

bool Precision::unscale_and_check_overflow(torch::nn::Module& model, Strategy& strategy,
                                           int64_t step) {
  if (!scaler_) return false;  // fp32/bf16: nothing to do on the step's hot path
  // Every process must skip the same steps, so the flag is agreed on before anyone reads it.
  const at::Tensor found_inf =
      strategy.any_across_processes(scaler_->unscale_(strategy.optimizer_parameters(model)));
  const bool overflow = found_inf.item<float>() != 0.0f;  // one host sync, as GradScaler.step
  const double scale = overflow ? scaler_->get_scale() : 0.0;
  scaler_->update(found_inf);
  if (overflow)
    logging::logger()->info(
        "step {}: gradients overflowed (inf/NaN) at loss scale {}; optimizer and scheduler step "
        "skipped, loss scale now {}",
        step, scale, scaler_->get_scale());
  return overflow;
}

std::string Precision::describe() const {
  const auto dtype = autocast_dtype();
  std::string out = dtype ? std::string(dtype_name(*dtype)) + " autocast"
                    : options_.parameter_dtype
                        ? std::string(dtype_name(*options_.parameter_dtype)) +
                              " parameters with fp32 master weights"
                        : "fp32";
  out += " on " + c10::DeviceTypeName(device_type_, /*lower_case=*/true);
  if (scaler_) {
    const auto& o = scaler_->options();
    out += o.policy == GradScalerOptions::Policy::kTorch ? ", dynamic loss scaling (torch)"
           : o.loss_scale > 0                            ? ", static loss scale (deepspeed)"
                                                         : ", dynamic loss scaling (deepspeed)";
    out += scaler_->uses_fused_kernels() ? " with fused kernels" : "";
  } else {
    out += ", no loss scaling";
  }
  if (options_.full_eval_dtype)
    out += ", full eval in " + std::string(dtype_name(*options_.full_eval_dtype));
  return out;
}

void apply_tf32(std::optional<bool> tf32, const c10::Device& device) {
  if (!tf32) return;
  if (*tf32 && !is_ampere_or_newer(device))
    throw ArgumentError(
        "--tf32 requires an Ampere or newer GPU (compute capability 8.0+), and this run is on " +
        device.str() + "; drop --tf32");
  // HF: torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32. Setting
  // false without such a GPU is harmless, as in HF.
  at::globalContext().setAllowTF32CuBLAS(*tf32);
  at::globalContext().setAllowTF32CuDNN(*tf32);
}

}  // namespace ctrainer
