#pragma once
/// \file A module's state dict as transformers names and orders it: what save_pretrained writes
/// and what adapters (models/lora) pick their tensors from.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

namespace ctrainer {

/// Parameters and buffers by their hierarchical names (the HF state_dict keys), detached.
std::map<std::string, at::Tensor> module_state_dict(const torch::nn::Module& module);

/// module_state_dict() in torch's state_dict order (each module's parameters, then its buffers,
/// modules in pre-order): the order transformers splits shards in.
std::vector<std::pair<std::string, at::Tensor>> ordered_state_dict(const torch::nn::Module& module);

}  // namespace ctrainer
