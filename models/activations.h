#pragma once
/// \file Hugging Face's hidden activations by their config.json names (transformers ACT2FN).
#include <string>

#include <ATen/ATen.h>

namespace ctrainer {

/// Applies the activation named `name`: "gelu" (exact, erf-based; HF GELUActivation), "gelu_new"
/// (tanh approximation, HF NewGELUActivation, also GPT-2's), "relu", "silu" / "swish" (Llama's).
/// Throws ArgumentError for
/// any other name, listing the supported ones.
at::Tensor apply_activation(const std::string& name, const at::Tensor& x);

/// True when apply_activation() knows `name`.
bool is_supported_activation(const std::string& name);

}  // namespace ctrainer
