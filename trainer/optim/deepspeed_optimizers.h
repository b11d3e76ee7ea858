#pragma once
/// \file The optimizer of a DeepSpeed config's "optimizer" section ({"type", "params"}), built
/// as DeepSpeed's engine builds it (deepspeed/runtime/engine.py _configure_basic_optimizer,
/// DeepSpeed 0.19) for the parameters Hugging Face's Trainer hands it.
///
/// Parameters and groups: when the DeepSpeed config has an "optimizer" section, HF's
/// integrations/deepspeed.py deepspeed_optim_sched does NOT call Trainer.create_optimizer; it
/// wraps `[p for p in model.parameters() if p.requires_grad]` in accelerate's DummyOptim, and
/// accelerate passes that flat list to deepspeed.initialize(model_parameters=...). DeepSpeed
/// builds its optimizer on it, so there is ONE param group and the config's weight_decay
/// applies to every parameter, biases and LayerNorm weights included (unlike
/// create_optimizer's two groups). Without an "optimizer" section HF uses create_optimizer
/// (optimizer_factory.h) instead, and a DeepSpeed "scheduler" can drive either.
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <nlohmann/json_fwd.hpp>

namespace ctrainer {

/// The optimizer of DeepSpeed type `type` over `model`'s trainable parameters (one group, in
/// model.parameters() order), with the config's "params" and DeepSpeed's defaults:
/// - "Adam" / "AdamW" (case-insensitive, as DeepSpeed lower-cases its own optimizer names):
///   DeepSpeed's FusedAdam (DeepSpeedCPUAdam under ZeRO offload; same defaults): lr 1e-3,
///   betas [0.9, 0.999], eps 1e-8, weight_decay 0, bias_correction true. "AdamW", and "Adam"
///   unless `adam_w_mode: false`, decay the weights decoupled -> FusedAdamW (torch's fused
///   kernel; torch::optim::AdamW with `torch_adam: true`); "Adam"
///   with `adam_w_mode: false` adds L2 to the gradient -> torch::optim::Adam. With
///   `torch_adam: true` DeepSpeed uses torch.optim.AdamW / Adam themselves, whose default
///   weight_decay is 0.01 for AdamW (0 for Adam) and which allow `amsgrad: true`.
///   Same update formula as FusedAdam; not bitwise equal to its CUDA kernel.
/// - "SGD" (case-sensitive: DeepSpeed looks it up as torch.optim.SGD): lr 1e-3, momentum 0,
///   dampening 0, weight_decay 0, nesterov false (torch's defaults).
/// "auto" values must already be filled by the config loader. Throws ArgumentError naming
/// `optimizer.type` for DeepSpeed or torch optimizers ctrainer does not implement (OneBitAdam,
/// Lamb, Lion, Adagrad, MuAdam, ...) and unknown types, and `optimizer.params.<key>` for unknown
/// keys, ill-typed or out-of-range values, a remaining "auto", and `max_grad_norm` (DeepSpeed's
/// `gradient_clipping` replaces it). Throws ArgumentError when no parameter requires grad.
std::shared_ptr<torch::optim::Optimizer> create_deepspeed_optimizer(const std::string& type,
                                                                    const nlohmann::json& params,
                                                                    torch::nn::Module& model);

}  // namespace ctrainer
