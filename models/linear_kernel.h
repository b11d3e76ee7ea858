#pragma once
/// \file The linear layer's matrix product, y = x Wᵀ + b, with the GEMM chosen per call: on the
/// CPU in fp32 through oneDNN's matmul, elsewhere through at::linear.
///
/// Why: libtorch's fp32 at::linear on the CPU calls MKL's sgemm, and MKL picks its kernels by CPU
/// vendor: on AMD processors it runs its AVX2 code even where AVX-512 is there. On the 2-core AMD
/// EPYC (Zen 5) build machine oneDNN (also inside libtorch, as the op mkldnn::_linear_pointwise
/// that torch.compile's CPU backend calls) ran GPT-2's and BERT's forward products at ~2.2× MKL's
/// GFLOP/s, a training step's three products at ~1.8-2.1×, and a greedy decoding step's LM head
/// (1 × 512 × 32128) at ~2.7× (ctrainer-bench linear_kernel). On Intel processors MKL runs its
/// AVX-512 kernels, so the gain should be small there (not measured). Both compute the same sums
/// in fp32; only the order of the additions differs (results agree to ~1e-6 relative).
#include <cstdint>
#include <optional>
#include <string_view>

#include <ATen/ATen.h>

namespace ctrainer {

/// The GEMM that linear() runs.
enum class LinearKernel {
  kAten,    ///< at::linear (MKL's sgemm on the CPU, cuBLAS on CUDA).
  kOneDnn,  ///< oneDNN's matmul through mkldnn::_linear_pointwise (fp32, CPU).
};

/// y = input Wᵀ + bias over input's last dimension, as at::linear(input, weight, bias) computes
/// it, differentiable in all three. weight is [out, in] and may be a strided view (GPT-2's Conv1D
/// passes its [in, out] weight transposed; see onednn_linear_copies_weight() for other views). Runs
/// on linear_kernel_for(input, weight)'s kernel.
/// On oneDNN its backward is not differentiable again: double backward (create_graph) through
/// it needs CTRAINER_CPU_LINEAR=aten.
at::Tensor linear(const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias = std::nullopt);

/// The fewest elements of a contiguous weight with more outputs than inputs whose gradient
/// linear()'s backward computes with at::mm (BLAS) instead of oneDNN, when the product has 256
/// rows or more: oneDNN's fast form would hand the gradient over transposed, and copying a
/// matrix this large (32 MiB) into the weight's layout costs more than BLAS's slower product.
constexpr int64_t kBlasWeightGradientMinElements = int64_t{8} << 20;

/// Whether linear() on oneDNN copies `weight` into contiguous rows first: when the weight is
/// neither contiguous nor the transpose of a contiguous tensor (a view whose rows or columns lie
/// further apart than its sizes, as one head of k inside a fused qkv projection). oneDNN runs
/// such a weight on its reference kernel: a 256 × 64 by 64 × 256 product took 46 ms instead of
/// 0.04 ms on the AMD build machine, where the copy costs one pass over the weight.
bool onednn_linear_copies_weight(const at::Tensor& weight);

/// The kernel linear() uses for these tensors: oneDNN when both are fp32 CPU tensors, the weight is
/// 2-D, CPU autocast is off (autocast's bf16 casts belong to at::linear), libtorch has oneDNN
/// enabled and the environment does not ask for ATen (see cpu_linear_preference()).
LinearKernel linear_kernel_for(const at::Tensor& input, const at::Tensor& weight);

/// What CTRAINER_CPU_LINEAR asks for: "onednn" (also when unset or empty) or "aten" (every
/// product through at::linear, e.g. to compare with PyTorch's numbers bit for bit). Read once per
/// process. Throws ArgumentError naming the variable and its accepted values otherwise.
LinearKernel cpu_linear_preference();

/// Parses a CTRAINER_CPU_LINEAR value (nullptr: unset). Throws ArgumentError as above.
LinearKernel parse_cpu_linear_preference(const char* value);

}  // namespace ctrainer
