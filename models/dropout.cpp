#include <ctrainer/models/dropout.h>

#include <cmath>
#include <cstdint>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/ops/dropout.h>
#include <torch/autograd.h>

namespace ctrainer {
namespace {

/// SplitMix64's finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mix whose outputs for
/// consecutive counters pass BigCrush; two 32-bit draws per call.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
constexpr int64_t kGrain = 16384;  // elements per parallel task

/// The element keeps iff its 32-bit draw is >= threshold (probability 1 - threshold / 2^32).
uint32_t drop_threshold(double p) {
  return static_cast<uint32_t>(std::min(std::llround(p * 4294967296.0), 4294967295LL));
}

/// One seed per call from the default CPU generator, under its lock (as torch's samplers do).
uint64_t draw_seed() {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
}

/// out = in * scale where the element is kept, 0 elsewhere. With `draw`, the keep mask is drawn
/// (and written to `keep`) from `seed`; without, it is read from `keep` (the backward). Pairs of
/// elements share one 64-bit draw and tasks start at even indices, so element i always gets the
/// same half of the same draw whatever the threads. Half types compute in float.
void masked_scale(const at::Tensor& input, const at::Tensor& keep, at::Tensor& out,
                  uint64_t seed, uint32_t threshold, double scale, bool draw) {
  const int64_t n = input.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, input.scalar_type(), "dropout", [&] {
    using Math = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
    const Math s = static_cast<Math>(scale);
    const scalar_t* in = input.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    if (draw) {
      uint8_t* k = keep.mutable_data_ptr<uint8_t>();
      at::parallel_for(0, (n + 1) / 2, kGrain / 2, [&](int64_t begin, int64_t end) {
        for (int64_t pair = begin; pair < end; ++pair) {
          const uint64_t bits = mix64(seed + static_cast<uint64_t>(pair) * kGolden);
          const int64_t i = 2 * pair;
          const bool k0 = static_cast<uint32_t>(bits) >= threshold;
          k[i] = k0;
          o[i] = k0 ? static_cast<scalar_t>(static_cast<Math>(in[i]) * s) : scalar_t(0);
          if (i + 1 < n) {
            const bool k1 = static_cast<uint32_t>(bits >> 32) >= threshold;
            k[i + 1] = k1;
            o[i + 1] = k1 ? static_cast<scalar_t>(static_cast<Math>(in[i + 1]) * s) : scalar_t(0);
          }
        }
      });
    } else {
      const uint8_t* k = keep.const_data_ptr<uint8_t>();
      at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
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
    masked_scale(in, keep, out, draw_seed(), drop_threshold(p), scale, /*draw=*/true);
    ctx->save_for_backward({keep});
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor keep = ctx->get_saved_variables()[0];
    const at::Tensor grad = grads[0].contiguous();
    at::Tensor out = at::empty_like(grad, at::MemoryFormat::Contiguous);
    masked_scale(grad, keep, out, 0, 0, ctx->saved_data["scale"].toDouble(), /*draw=*/false);
    return {out, at::Tensor()};
  }
};

}  // namespace

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
