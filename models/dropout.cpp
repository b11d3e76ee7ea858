#include <ctrainer/models/dropout.h>

#include <cmath>
#include <cstdint>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/dropout.h>
#include <torch/autograd.h>

#include <ctrainer/core/parallel_for.h>
#include <ctrainer/models/dropout_mask.h>

namespace ctrainer {
namespace {

constexpr int64_t kGrain = 16384;  // elements per parallel task

/// out = in * scale where the element is kept, 0 elsewhere. With `draw`, the keep mask is drawn
/// (and written to `keep`) from `mask`; without, it is read from `keep` (the backward). Pairs of
/// elements share one 64-bit draw and tasks start at even indices, so element i always gets the
/// same half of the same draw whatever the threads. Half types compute in float.
void masked_scale(const at::Tensor& input, const at::Tensor& keep, at::Tensor& out,
                  const DropoutMask& mask, double scale, bool draw) {
  const int64_t n = input.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, input.scalar_type(), "dropout", [&] {
    using Math = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
    const Math s = static_cast<Math>(scale);
    const scalar_t* in = input.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    if (draw) {
      uint8_t* k = keep.mutable_data_ptr<uint8_t>();
      ctrainer::parallel_for(0, (n + 1) / 2, kGrain / 2, [&](int64_t begin, int64_t end) {
        for (int64_t pair = begin; pair < end; ++pair) {
          const uint64_t bits = mask.pair_bits(pair);
          const int64_t i = 2 * pair;
          const bool k0 = mask.keeps_low(bits);
          k[i] = k0;
          o[i] = k0 ? static_cast<scalar_t>(static_cast<Math>(in[i]) * s) : scalar_t(0);
          if (i + 1 < n) {
            const bool k1 = mask.keeps_high(bits);
            k[i + 1] = k1;
            o[i + 1] = k1 ? static_cast<scalar_t>(static_cast<Math>(in[i + 1]) * s) : scalar_t(0);
          }
        }
      });
    } else {
      const uint8_t* k = keep.const_data_ptr<uint8_t>();
      ctrainer::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          o[i] = k[i] ? static_cast<scalar_t>(static_cast<Math>(in[i]) * s) : scalar_t(0);
      });
    }
  });
}

struct CounterDropout : torch::autograd::Function<CounterDropout> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                            double p) {
    const at::Tensor in = input.contiguous();
    at::Tensor out = at::empty_like(in, at::MemoryFormat::Contiguous);
    at::Tensor keep = at::empty(in.sizes(), in.options().dtype(at::kByte));
    const double scale = 1.0 / (1.0 - p);
    masked_scale(in, keep, out, DropoutMask::draw(p), scale, /*draw=*/true);
    ctx->save_for_backward({keep});
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor keep = ctx->get_saved_variables()[0];
    const at::Tensor grad = grads[0].contiguous();
    at::Tensor out = at::empty_like(grad, at::MemoryFormat::Contiguous);
    masked_scale(grad, keep, out, DropoutMask{}, ctx->saved_data["scale"].toDouble(),
                 /*draw=*/false);
    return {out, at::Tensor()};
  }
};

}  // namespace

DropoutMask DropoutMask::draw(double p) {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return {at::check_generator<at::CPUGeneratorImpl>(generator)->random64(), threshold_for(p)};
}

at::Tensor dropout(const at::Tensor& input, double p, bool training) {
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0.0) return input;
  if (p == 1.0) return input * 0.0;  // everything dropped (torch: the same, keeping the graph)
  if (!input.device().is_cpu() || !at::isFloatingType(input.scalar_type()))
    return at::dropout(input, p, true);
  return CounterDropout::apply(input, p);
}

DropoutImpl::DropoutImpl(double p) : p_(p) {
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
}

at::Tensor DropoutImpl::forward(const at::Tensor& input) {
  return ctrainer::dropout(input, p_, is_training());
}

}  // namespace ctrainer
