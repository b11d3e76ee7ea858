#pragma once
/// \file The time a GPT-2 training step spends in its products alone, for clm_vs_hf's "products
/// bound": each Linear's forward and backward products and each layer's attention, timed one by
/// one in the bench process at the step's shapes. A step that did nothing else (no LayerNorm,
/// GELU, dropout, residual adds, loss, optimizer or autograd bookkeeping) would take this long,
/// so flops / bound / GEMM FLOP/s is the most achieved / GEMM FLOP/s that any trainer reaches on
/// these kernels; the step's other work is what separates a measured run from it.
#include <cstdint>
#include <string>

namespace ctrainer::bench {

/// A GPT-2 training step's shape (clm_vs_hf's workloads).
struct Gpt2StepShape {
  int64_t n_embd, n_layer, n_head, vocab, block, batch;
  double attn_pdrop = 0.1;  ///< GPT-2's default: attention takes its dropout path
};

/// Seconds of one training step's products, fp32 on the CPU.
struct ProductsBound {
  double linear_s = 0;     ///< the 4 Linears of every layer and the tied LM head
  double attention_s = 0;  ///< every layer's attention (ctrainer::attention, causal, training)
  double step_s() const { return linear_s + attention_s; }
  std::string what;  ///< how it was measured
};

/// Times, with `threads` intra-op threads, each product as GPT-2 runs it (ctrainer::linear with
/// Conv1D's transposed [in, out] weights and biases, the LM head on the [V, h] embedding without
/// a bias; ctrainer::attention on heads viewed out of one fused qkv tensor), forward and
/// backward, the best of several runs after warm-ups, and adds them up per step. Installs the
/// large-buffer cache and glibc's kept heap in this process first (as run_clm runs), so that
/// no product pays for the kernel's zeroing of fresh pages.
ProductsBound measure_gpt2_products(const Gpt2StepShape& shape, int threads);

}  // namespace ctrainer::bench
