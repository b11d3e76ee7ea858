#pragma once
/// \file An optimizer's full state (per-parameter buffers, per-group hyper-parameters) as named
/// tensors plus JSON, so checkpoints never depend on libtorch's TorchScript-versioned archive
/// format and load the same under every torch version (files written by 1.13 builds included).
#include <map>
#include <string>

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>
#include <nlohmann/json.hpp>

namespace ctrainer {

/// The format written into OptimizerStateDict::meta["format_version"].
inline constexpr int kOptimizerStateFormatVersion = 1;

/// An optimizer's full state as named tensors + JSON, independent of libtorch's archive format.
///
/// `tensors` holds every per-parameter state tensor under "state.<group>.<index>.<name>", where
/// <group> is the param group's position, <index> the parameter's position inside that group and
/// <name> one of exp_avg, exp_avg_sq, max_exp_avg_sq (AdamW/Adam) or momentum_buffer (SGD).
///
/// `meta` is
/// \code{.json}
/// {"format_version": 1, "optimizer": "AdamW" | "Adam" | "SGD",
///  "param_groups": [
///    {"options": {"lr": .., "betas": [b1, b2], "eps": .., "weight_decay": .., "amsgrad": ..}
///              // SGD: {"lr", "momentum", "dampening", "weight_decay", "nesterov"}
///     "params": [{"shape": [..], "dtype": "Float",
///                 "state": null                                 // never stepped
///                        | {"step": 3, "tensors": ["exp_avg", "exp_avg_sq"]}}]}]}
/// \endcode
/// AdamW/Adam record "step" (an integer); SGD state has no scalars.
struct OptimizerStateDict {
  std::map<std::string, at::Tensor> tensors;
  nlohmann::json meta = nlohmann::json::object();
};

/// Captures the state of a torch::optim::AdamW, Adam or SGD. The tensors are detached views of
/// the optimizer's live buffers, as torch's Optimizer.state_dict() returns them: write them out
/// (or clone them) before the next step(), which updates them in place. Parameters that have no
/// state yet (never stepped) are recorded as "state": null. Throws ArgumentError for any other
/// optimizer type or a param group whose options do not belong to the optimizer's type.
OptimizerStateDict optimizer_state_dict(const torch::optim::Optimizer& optimizer);

/// Restores `state` into an optimizer of the same type built over the same parameters in the
/// same order (as a fresh ctrainer::create_optimizer on the same model produces). Every group's
/// hyper-parameters (lr included, exactly) are restored, and each parameter's state is replaced
/// by the saved one (or cleared when none was saved); state tensors are copied onto the
/// parameter's device and dtype, so the optimizer never aliases `state.tensors`.
/// Validates everything before modifying anything and throws ArgumentError naming the problem on:
/// a different optimizer type, format version, number of groups or parameters per group; a
/// parameter whose shape differs from the saved one (naming group, index and both shapes); a
/// missing, misshapen or unexpected "state.*" tensor; or a missing or ill-typed meta key.
void load_optimizer_state_dict(torch::optim::Optimizer& optimizer, const OptimizerStateDict& state);

}  // namespace ctrainer
