#pragma once
/// \file Precision: which mixed precision a run uses (from --fp16 / --bf16 / --*_full_eval and
/// the device), checked once so the training loop only asks "which autocast dtype?", "is there
/// a loss scaler?" and "which dtype for full evaluation?".
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>

#include <ctrainer/trainer/precision/grad_scaler.h>

namespace ctrainer {

class Strategy;
struct TrainingArguments;

/// The compute dtype of forward and loss.
enum class MixedPrecision {
  kNo,    ///< fp32
  kFp16,  ///< float16 autocast (CUDA)
  kBf16,  ///< bfloat16 autocast (CPU and CUDA)
};

/// What a Precision is made of; Precision::from_args fills it the way HF's Trainer does.
struct PrecisionOptions {
  MixedPrecision mixed = MixedPrecision::kNo;
  /// Loss scaling; from_args sets it for fp16 (torch.amp.GradScaler defaults). Setting it
  /// without fp16 is allowed: it is harmless in fp32 and lets tests drive overflow handling on a
  /// CPU, and a DeepSpeed config may choose the DeepSpeed policy or a static scale.
  std::optional<GradScalerOptions> loss_scaling;
  /// Cast the model to this dtype for evaluation and prediction outside training
  /// (--bf16_full_eval: bfloat16, --fp16_full_eval: float16).
  std::optional<at::ScalarType> full_eval_dtype;
  /// The model itself is stored in this 16-bit dtype and the optimizer steps fp32 master copies
  /// (DeepSpeed's bf16/fp16 modes under ZeRO, done by the sharded strategy): no autocast then,
  /// and `mixed` must be kNo.
  std::optional<at::ScalarType> parameter_dtype;
};

/// A run's precision policy: the autocast dtype of forward+loss, the loss scaler, the
/// full-evaluation dtype. Built and checked once per Trainer.
class Precision {
 public:
  /// Checks `options` against `device` and throws ArgumentError naming the flag when they
  /// cannot work: float16 (autocast or full eval) on a CPU, bfloat16 on a GPU without it.
  Precision(PrecisionOptions options, const c10::Device& device);
  /// HF's choice: --fp16 → float16 autocast + GradScaler(2^16, 2, 0.5, 2000); --bf16 →
  /// bfloat16 autocast without loss scaling; --fp16_full_eval / --bf16_full_eval. Also checks
  /// --half_precision_backend (auto, or cpu_amp on a CPU). `fp16_loss_scaling` replaces the
  /// GradScaler defaults for --fp16 (a DeepSpeed config's fp16 section).
  /// `parameter_dtype`: the sharded strategy stores the model in this 16-bit dtype (DeepSpeed's
  /// bf16/fp16 with ZeRO); --fp16 / --bf16 then mean no autocast (fp16 keeps its loss scaler).
  static std::shared_ptr<Precision> from_args(
      const TrainingArguments& args, const c10::Device& device,
      const std::optional<GradScalerOptions>& fp16_loss_scaling = std::nullopt,
      std::optional<at::ScalarType> parameter_dtype = std::nullopt);

  MixedPrecision mixed() const { return options_.mixed; }
  /// The dtype of an AutocastScope around forward+loss; none in fp32.
  std::optional<at::ScalarType> autocast_dtype() const;
  c10::DeviceType device_type() const { return device_type_; }
  /// The loss scaler, or null when the loss is not scaled.
  GradScaler* grad_scaler() { return scaler_.get(); }
  const GradScaler* grad_scaler() const { return scaler_.get(); }
  std::optional<at::ScalarType> full_eval_dtype() const { return options_.full_eval_dtype; }
  /// `loss` times the loss scale (unchanged without scaling).
  at::Tensor scale_loss(const at::Tensor& loss) const;
  /// At an accumulation boundary, after `strategy` reduced the gradients: unscales the
  /// gradients of `model`'s parameters (so clipping and grad_norm see the true values), agrees with
  /// every process on whether any overflowed (inf/NaN), updates the loss scale and logs a skip at
  /// optimizer step `step`. Returns true when the optimizer and scheduler steps must be skipped
  /// (HF: GradScaler.step, then optimizer_step_was_skipped); always false without loss scaling.
  bool unscale_and_check_overflow(torch::nn::Module& model, Strategy& strategy, int64_t step);
  /// One line for the training banner, e.g. "bf16 autocast on cpu, no loss scaling".
  std::string describe() const;

 private:
  PrecisionOptions options_;
  c10::DeviceType device_type_;
  std::unique_ptr<GradScaler> scaler_;
};

/// HF's --tf32: true lets CUDA matmuls and cuDNN convolutions use TF32 (an error without a GPU
/// that has it), false forbids it, unset leaves libtorch's defaults.
void apply_tf32(std::optional<bool> tf32, const c10::Device& device);

}  // namespace ctrainer
