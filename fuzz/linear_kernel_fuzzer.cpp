// ctrainer::linear against at::linear on arbitrary shapes, layouts and values, and
// CTRAINER_CPU_LINEAR's parser on arbitrary text. The first bytes choose the rows (0-40, also
// 3-D inputs), in and out (1-40), a bias or none, a transposed weight view (GPT-2's Conv1D) or a
// contiguous one, and whether the product builds a graph; the rest are the values (bytes mapped
// to [-2, 2)). The output and, with a graph, the gradients of input, weight and bias must equal
// at::linear's in fp64 within fp32 rounding (the γ_n bound, element by element); a
// CTRAINER_CPU_LINEAR value must parse or throw ArgumentError. Anything else is a finding.
#include <algorithm>
#include <cstdlib>
#include <string>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/linear_kernel.h>

#include "fuzz_support.h"

namespace {

at::Tensor values(const uint8_t* data, size_t size, size_t& offset, at::IntArrayRef shape) {
  at::Tensor t = at::empty(shape, at::kFloat);
  float* out = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint8_t byte = size == 0 ? 0 : data[offset++ % size];
    out[i] = static_cast<float>(byte) / 64.0f - 2.0f;
  }
  return t;
}

// Each element of an fp32 sum of n products may differ from the exact one by about n · 2⁻²⁴ ·
// Σ|product| (the classic bound γ_n); twice that is allowed. `magnitude` is Σ|product| per
// element, computed in fp64.
void expect_within_rounding(const at::Tensor& ours, const at::Tensor& exact,
                            const at::Tensor& magnitude, int64_t terms) {
  if (ours.sizes() != exact.sizes()) std::abort();
  if (exact.numel() == 0) return;
  const at::Tensor allowed = magnitude * (2.0 * double(terms + 1) * 0x1p-24) + 1e-30;
  if ((ours.to(at::kDouble) - exact).abs().gt(allowed).any().item<bool>()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ctrainer::parse_cpu_linear_preference(
        std::string(ctrainer::fuzz::bytes_of(data, std::min<size_t>(size, 16))).c_str());
  } catch (const ctrainer::ArgumentError&) {
  }
  if (size < 6) return 0;
  const int64_t rows = data[0] % 41, in = 1 + data[1] % 40, out = 1 + data[2] % 40;
  const bool three_d = data[3] & 1, with_bias = data[3] & 2, transposed = data[3] & 4,
             with_graph = data[3] & 8;
  size_t offset = 4;
  const uint8_t* body = data + offset;
  const size_t body_size = size - offset;
  offset = 0;
  const at::Tensor input = three_d && rows % 2 == 0 && rows > 0
                               ? values(body, body_size, offset, {2, rows / 2, in})
                               : values(body, body_size, offset, {rows, in});
  const at::Tensor stored = transposed ? values(body, body_size, offset, {in, out})
                                       : values(body, body_size, offset, {out, in});
  const at::Tensor bias = values(body, body_size, offset, {out});

  const at::Tensor x = input.clone().requires_grad_(with_graph);
  const at::Tensor parameter = stored.clone().requires_grad_(with_graph);
  const at::Tensor b = bias.clone().requires_grad_(with_graph);
  const at::Tensor y = ctrainer::linear(x, transposed ? parameter.t() : parameter,
                                        with_bias ? std::optional<at::Tensor>(b) : std::nullopt);

  const at::Tensor x64 = input.to(at::kDouble).requires_grad_(with_graph);
  const at::Tensor p64 = stored.to(at::kDouble).requires_grad_(with_graph);
  const at::Tensor b64 = bias.to(at::kDouble).requires_grad_(with_graph);
  const at::Tensor y64 = at::linear(x64, transposed ? p64.t() : p64,
                                    with_bias ? std::optional<at::Tensor>(b64) : std::nullopt);
  const at::Tensor x_abs = x64.detach().abs().reshape({-1, in});
  const at::Tensor w_abs = (transposed ? p64.detach().t() : p64.detach()).abs();  // [out, in]
  at::Tensor output_magnitude = at::matmul(x_abs, w_abs.t());
  if (with_bias) output_magnitude = output_magnitude + b64.detach().abs();
  expect_within_rounding(y.detach().reshape({-1, out}), y64.detach().reshape({-1, out}),
                         output_magnitude, in);
  if (!with_graph || y.numel() == 0) return 0;
  const at::Tensor upstream = values(body, body_size, offset, y.sizes());
  (y * upstream).sum().backward();
  (y64 * upstream.to(at::kDouble)).sum().backward();
  const at::Tensor u_abs = upstream.to(at::kDouble).abs().reshape({-1, out});
  expect_within_rounding(x.grad().reshape({-1, in}), x64.grad().reshape({-1, in}),
                         at::matmul(u_abs, w_abs), out);
  const at::Tensor weight_magnitude = at::matmul(u_abs.t(), x_abs);  // [out, in]
  expect_within_rounding(parameter.grad(), p64.grad(),
                         transposed ? weight_magnitude.t() : weight_magnitude, x_abs.size(0));
  if (with_bias) expect_within_rounding(b.grad(), b64.grad(), u_abs.sum(0), x_abs.size(0));
  return 0;
}
