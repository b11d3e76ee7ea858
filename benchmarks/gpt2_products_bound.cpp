#include "gpt2_products_bound.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/autograd.h>

#include <ctrainer/models/attention.h>
#include <ctrainer/models/linear_kernel.h>
#include <ctrainer/trainer/runtime/cpu_runtime.h>
#include <ctrainer/trainer/runtime/large_buffer_cache.h>

namespace ctrainer::bench {
namespace {

constexpr int kWarmups = 2, kMeasured = 5;

/// Best wall seconds of `pass` over kMeasured runs after kWarmups.
template <typename Pass>
double best_seconds(const Pass& pass) {
  double best = std::numeric_limits<double>::infinity();
  for (int run = 0; run < kWarmups + kMeasured; ++run) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (run >= kWarmups) best = std::min(best, seconds);
  }
  return best;
}

/// Forward and backward of y = x W + b over `rows` rows as GPT-2 computes them: a Conv1D's
/// [in, out] weight transposed (`conv1d`), or the tied LM head's [out, in] embedding, no bias.
double linear_seconds(int64_t rows, int64_t in, int64_t out, bool conv1d) {
  const at::Tensor x = at::randn({rows, in}).requires_grad_();
  const at::Tensor weight =
      (conv1d ? at::randn({in, out}) : at::randn({out, in})).mul_(0.02).requires_grad_();
  const at::Tensor bias = conv1d ? at::zeros({out}).requires_grad_() : at::Tensor();
  const at::Tensor upstream = at::randn({rows, out});
  return best_seconds([&] {
    const at::Tensor y =
        conv1d ? ctrainer::linear(x, weight.t(), bias) : ctrainer::linear(x, weight);
    y.backward(upstream);
    for (const at::Tensor& t : {x, weight, bias})
      if (t.defined()) t.mutable_grad() = at::Tensor();
  });
}

/// One layer's attention, forward and backward, on heads viewed out of a fused qkv tensor.
double attention_seconds(const Gpt2StepShape& s) {
  const int64_t head_width = s.n_embd / s.n_head;
  const at::Tensor qkv = at::randn({s.batch, s.block, 3 * s.n_embd}).requires_grad_();
  const at::Tensor upstream = at::randn({s.batch, s.n_head, s.block, head_width});
  return best_seconds([&] {
    const std::vector<at::Tensor> parts = qkv.split(s.n_embd, 2);
    const auto heads = [&](const at::Tensor& x) {
      return x.view({s.batch, s.block, s.n_head, head_width}).transpose(1, 2);
    };
    const at::Tensor context = attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), {},
                                         s.attn_pdrop, /*training=*/true, /*is_causal=*/true);
    context.backward(upstream);
    qkv.mutable_grad() = at::Tensor();
  });
}

}  // namespace

ProductsBound measure_gpt2_products(const Gpt2StepShape& s, int threads) {
  keep_freed_memory();
  install_large_buffer_cache();
  const int previous_threads = at::get_num_threads();
  at::set_num_threads(threads);
  at::manual_seed(0);
  const int64_t rows = s.batch * s.block, h = s.n_embd;
  ProductsBound bound;
  const double layer_linears = linear_seconds(rows, h, 3 * h, true) +  // c_attn
                               linear_seconds(rows, h, h, true) +      // attention's c_proj
                               linear_seconds(rows, h, 4 * h, true) +  // c_fc
                               linear_seconds(rows, 4 * h, h, true);   // the MLP's c_proj
  bound.linear_s = static_cast<double>(s.n_layer) * layer_linears +
                   linear_seconds(rows, h, s.vocab, false);  // lm_head
  bound.attention_s = static_cast<double>(s.n_layer) * attention_seconds(s);
  at::set_num_threads(previous_threads);
  bound.what = fmt::format(
      "each product of one step timed alone in the bench process, {} threads, fp32, best of {} "
      "after {} warm-ups, warm buffers (large-buffer cache): the layers' 4 Linears (forward, "
      "input and weight gradients) x {} layers, the tied LM head, and ctrainer::attention "
      "(causal, dropout {}) forward and backward x {} layers",
      threads, kMeasured, kWarmups, s.n_layer, s.attn_pdrop, s.n_layer);
  return bound;
}

}  // namespace ctrainer::bench
