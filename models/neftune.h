#pragma once
/// \file NEFTune (transformers' neftune_post_forward_hook, TrainingArguments.neftune_noise_alpha):
/// uniform noise added to the input embeddings while training.
#include <optional>

#include <ATen/ATen.h>

namespace ctrainer {

/// `embeddings` [B, T, H] plus noise drawn uniformly in [-m, m] from the global generator, m =
/// alpha / sqrt(T * H) computed in fp32 as transformers computes it, when `training` and
/// `alpha` is set; `embeddings` unchanged otherwise.
at::Tensor with_neftune_noise(const at::Tensor& embeddings, std::optional<double> alpha,
                              bool training);

}  // namespace ctrainer
