#pragma once
/// \file Optimizer creation as Hugging Face's Trainer.create_optimizer does it: two param groups,
/// one with weight decay and one without (biases and normalization parameters).
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {

/// HF's forbidden parameter-name patterns (Trainer.get_decay_parameter_names), searched in the
/// lower-cased hierarchical name: bias, layernorm, rmsnorm, (?:^|\.)norm(?:$|\.), _norm(?:$|\.).
const std::vector<std::string>& no_decay_name_patterns();

/// Names (as model.named_parameters() spells them, e.g. "encoder.layers.0.linear1.weight") of the
/// parameters that get weight decay, in named_parameters() order. Follows HF's
/// Trainer.get_decay_parameter_names: a parameter is excluded when it belongs (directly or
/// through sub-modules) to a normalization child module, or when its lower-cased name matches
/// one of no_decay_name_patterns(). HF's type check covers nn.LayerNorm only; ctrainer also
/// treats torch::nn GroupNorm, BatchNorm{1,2,3}d and InstanceNorm{1,2,3}d as normalization
/// layers (their affine parameters are never decayed in practice). requires_grad is not
/// considered here (create_optimizer skips frozen parameters).
std::vector<std::string> get_decay_parameter_names(const torch::nn::Module& model);

/// HF's Trainer.create_optimizer for `args.optim`:
/// - kAdamWTorch and kAdamWHf: torch::optim::AdamW, lr=learning_rate,
///   betas=(adam_beta1, adam_beta2), eps=adam_epsilon;
/// - kAdamWTorchFused: the same as a FusedAdamW (torch.optim.AdamW(fused=True));
/// - kSgd: torch::optim::SGD, lr=learning_rate, torch's defaults otherwise (momentum 0,
///   dampening 0, no Nesterov), as HF passes only the lr.
/// Both get two param groups, in this order: the decay parameters (weight_decay =
/// args.weight_decay) and the others (weight_decay = 0). Parameters with requires_grad=false are
/// left out, and an empty group is omitted. The optimizer's defaults() carry
/// args.learning_rate and torch's own weight decay (AdamW 0.01, SGD 0), as HF's do.
/// Throws ArgumentError for a value outside OptimizerName's table (an integer cast to it), out-
/// of-range hyper-parameters, or a model without trainable parameters. (The parser refuses the
/// HF optimizers ctrainer has not built with NotSupportedYet.)
std::shared_ptr<torch::optim::Optimizer> create_optimizer(const TrainingArguments& args,
                                                          torch::nn::Module& model);

}  // namespace ctrainer
