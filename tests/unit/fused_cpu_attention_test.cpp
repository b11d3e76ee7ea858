// models/fused_cpu_attention.h: attention with dropout on the CPU one head at a time must compute
// what the unfused path computes (the same kept elements for the same seed; values and the
// gradients of q, k and v against the unfused path in fp64) for causal, boolean and additive
// masks, odd sizes whose heads start at odd element indices, strided inputs and a given scale;
// ctrainer::attention must route to it; and what it keeps for the backward must be the bits of
// the mask, not the probabilities.
#include <gtest/gtest.h>

#include <cstdio>
#include <mutex>
#include <unordered_map>

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/torch.h>

#include <ctrainer/models/attention.h>
#include <ctrainer/models/fused_cpu_attention.h>

namespace ctrainer {
namespace fused_cpu_attention_test {

struct Case {
  const char* name;
  int64_t batch, heads, rows, cols, width;
  bool causal;
  enum { kNone, kPaddingBool, kRandomBool, kAdditive } mask;
  bool strided_q;  // q a permuted view of [B, L, H, E], as the model families pass it
  double scale;    // 0: 1 / sqrt(E)
};

struct Inputs {
  at::Tensor q, k, v, mask, upstream;
};

Inputs make_inputs(const Case& c) {
  torch::manual_seed(11);
  Inputs in;
  in.q = c.strided_q ? torch::randn({c.batch, c.rows, c.heads, c.width}).transpose(1, 2)
                     : torch::randn({c.batch, c.heads, c.rows, c.width});
  in.k = torch::randn({c.batch, c.heads, c.cols, c.width});
  in.v = torch::randn({c.batch, c.heads, c.cols, c.width + 3});
  in.upstream = torch::randn({c.batch, c.heads, c.rows, c.width + 3});
  if (c.mask == Case::kPaddingBool) {
    in.mask = torch::ones({c.batch, 1, 1, c.cols}, torch::kBool);
    in.mask.index_put_({c.batch - 1, 0, 0, torch::indexing::Slice(c.cols / 2, c.cols)}, false);
  } else if (c.mask == Case::kRandomBool) {
    in.mask = torch::rand({c.batch, 1, c.rows, c.cols}) > 0.3;
    in.mask.index_put_({0, 0, 0}, false);  // one query row blocked entirely: uniform attention
  } else if (c.mask == Case::kAdditive) {
    in.mask = -3.0 * torch::rand({c.batch, 1, 1, c.cols});  // a soft bias: every score counts
  }
  return in;
}

struct Result {
  at::Tensor out, grad_q, grad_k, grad_v;
};

/// Output and gradients of one path, with the dropout seed fixed.
template <class Attend>
Result run(const Inputs& in, at::ScalarType dtype, Attend attend) {
  const at::Tensor q = in.q.to(dtype).detach().requires_grad_();
  const at::Tensor k = in.k.to(dtype).detach().requires_grad_();
  const at::Tensor v = in.v.to(dtype).detach().requires_grad_();
  at::Tensor mask = in.mask;
  if (mask.defined() && mask.is_floating_point()) mask = mask.to(dtype);
  torch::manual_seed(123);
  const at::Tensor out = attend(q, k, v, mask);
  out.backward(in.upstream.to(dtype));
  return {out.detach().to(at::kDouble), q.grad().to(at::kDouble), k.grad().to(at::kDouble),
          v.grad().to(at::kDouble)};
}

double largest_difference(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

class FusedCpuAttentionCases : public ::testing::TestWithParam<Case> {};

TEST_P(FusedCpuAttentionCases, ComputesTheUnfusedPathsValuesAndGradients) {
  const Case& c = GetParam();
  const Inputs in = make_inputs(c);
  const double p = 0.3;
  const double scale = c.scale > 0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.width));
  ASSERT_TRUE(fused_cpu_attention_applies(in.q, in.k, in.v, in.mask));
  const Result fused = run(in, at::kFloat, [&](auto& q, auto& k, auto& v, auto& mask) {
    return fused_cpu_attention(q, k, v, mask, p, c.causal, scale);
  });
  const Result reference = run(in, at::kDouble, [&](auto& q, auto& k, auto& v, auto& mask) {
    return unfused_attention_with_dropout(q, k, v, mask, p, c.causal, scale);
  });
  EXPECT_EQ(fused.out.sizes(), reference.out.sizes());
  // The same elements dropped: exactly where the reference is zero (the probabilities are
  // positive elsewhere; the causal future is dropped on both sides).
  const at::Tensor probe_v = torch::eye(c.cols).expand({c.batch, c.heads, c.cols, c.cols});
  const Inputs probe{in.q, in.k, probe_v.contiguous(), in.mask, {}};
  torch::manual_seed(123);
  const at::Tensor kept_fused =
      fused_cpu_attention(probe.q, probe.k, probe.v, probe.mask, p, c.causal, scale).ne(0);
  torch::manual_seed(123);
  const at::Tensor kept_reference =
      unfused_attention_with_dropout(
          probe.q.to(at::kDouble), probe.k.to(at::kDouble), probe.v.to(at::kDouble),
          probe.mask.defined() && probe.mask.is_floating_point() ? probe.mask.to(at::kDouble)
                                                                 : probe.mask,
          p, c.causal, scale)
          .ne(0);
  EXPECT_TRUE(torch::equal(kept_fused, kept_reference)) << c.name;
  const double kept_share = kept_fused.to(at::kDouble).mean().item<double>();
  EXPECT_GT(kept_share, 0.2) << c.name;  // neither everything dropped nor kept
  EXPECT_LT(kept_share, 0.95) << c.name;

  // fp32 products over at most 64 terms against fp64.
  const double out_difference = largest_difference(fused.out, reference.out);
  const double q_difference = largest_difference(fused.grad_q, reference.grad_q);
  const double k_difference = largest_difference(fused.grad_k, reference.grad_k);
  const double v_difference = largest_difference(fused.grad_v, reference.grad_v);
  std::printf("[ measured ] %s: |out| %.2g, |dq| %.2g, |dk| %.2g, |dv| %.2g\n", c.name,
              out_difference, q_difference, k_difference, v_difference);
  EXPECT_LT(out_difference, 1e-5) << c.name;
  EXPECT_LT(q_difference, 1e-5) << c.name;
  EXPECT_LT(k_difference, 1e-5) << c.name;
  EXPECT_LT(v_difference, 1e-5) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FusedCpuAttentionCases,
    ::testing::Values(
        Case{"causal", 2, 3, 40, 40, 16, true, Case::kNone, true, 0},
        Case{"padding_mask", 2, 2, 24, 24, 8, false, Case::kPaddingBool, false, 0},
        Case{"random_mask_row_blocked", 2, 2, 17, 17, 8, false, Case::kRandomBool, true, 0},
        Case{"causal_and_additive_mask", 2, 2, 33, 33, 8, true, Case::kAdditive, false, 0},
        Case{"odd_cross_attention", 2, 3, 7, 13, 5, false, Case::kNone, true, 0},
        Case{"given_scale", 1, 2, 9, 11, 4, false, Case::kNone, false, 1.0},
        // Causal heads longer than kCausalRowsPerBlock: three row blocks, the last partial,
        // each against the columns it sees; with more keys than queries the unseen keys get
        // zero gradients. With a boolean mask too, one block (a row blocked entirely attends to
        // its future as well).
        Case{"causal_row_blocks", 1, 2, 2 * kCausalRowsPerBlock + 40, 2 * kCausalRowsPerBlock + 40,
             8, true, Case::kNone, true, 0},
        Case{"causal_and_boolean_mask_long", 1, 2, 2 * kCausalRowsPerBlock + 40,
             2 * kCausalRowsPerBlock + 40, 8, true, Case::kRandomBool, true, 0},
        Case{"causal_row_blocks_more_keys", 1, 2, kCausalRowsPerBlock + 44,
             kCausalRowsPerBlock + 144, 8, true, Case::kAdditive, false, 0}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(FusedCpuAttention, AttentionRoutesLongHeadsToItAndKeepsTheUnfusedPathForALearnedBias) {
  // Heads of kFusedAttentionMinScoresPerHead scores take the fused path, smaller ones the
  // unfused one: each routed result equals its path's bit for bit.
  const Case long_heads{"long", 1, 1, 256, 256, 8, true, Case::kNone, true, 0};
  ASSERT_GE(long_heads.rows * long_heads.cols, kFusedAttentionMinScoresPerHead);
  const Inputs long_in = make_inputs(long_heads);
  const double scale = 1.0 / std::sqrt(8.0);
  auto seeded = [](auto attend) {
    torch::manual_seed(5);
    return attend();
  };
  const at::Tensor routed_long = seeded(
      [&] { return attention(long_in.q, long_in.k, long_in.v, {}, 0.2, /*training=*/true, true); });
  EXPECT_TRUE(torch::equal(routed_long, seeded([&] {
                             return fused_cpu_attention(long_in.q, long_in.k, long_in.v, {}, 0.2,
                                                        true, scale);
                           })));
  EXPECT_FALSE(torch::equal(routed_long, seeded([&] {
                              return unfused_attention_with_dropout(long_in.q, long_in.k, long_in.v,
                                                                    {}, 0.2, true, scale);
                            })));
  const Case c{"short", 2, 2, 12, 12, 8, true, Case::kNone, true, 0};
  const Inputs in = make_inputs(c);
  const at::Tensor routed_short =
      seeded([&] { return attention(in.q, in.k, in.v, {}, 0.2, /*training=*/true, true); });
  EXPECT_TRUE(torch::equal(routed_short, seeded([&] {
                             return unfused_attention_with_dropout(in.q, in.k, in.v, {}, 0.2, true,
                                                                   scale);
                           })));

  // T5's position bias is learned: a mask that needs a gradient takes the unfused path and gets
  // its gradient.
  const at::Tensor bias = torch::randn({1, 2, 12, 12}, torch::requires_grad());
  EXPECT_FALSE(fused_cpu_attention_applies(in.q, in.k, in.v, bias));
  attention(in.q, in.k, in.v, bias, 0.2, true, false, 1.0).sum().backward();
  ASSERT_TRUE(bias.grad().defined());
  EXPECT_GT(bias.grad().abs().sum().item<double>(), 0.0);

  // Inputs it does not serve.
  EXPECT_FALSE(fused_cpu_attention_applies(in.q.to(at::kDouble), in.k, in.v, {}));
  EXPECT_FALSE(fused_cpu_attention_applies(in.q[0], in.k[0], in.v[0], {}));
  EXPECT_FALSE(fused_cpu_attention_applies(in.q, in.k.narrow(1, 0, 1), in.v, {}));
  EXPECT_FALSE(fused_cpu_attention_applies(in.q, in.k, in.v, torch::ones({3, 1, 1, 12})));
  EXPECT_FALSE(
      fused_cpu_attention_applies(in.q, in.k, in.v, torch::ones({1, 1, 1, 12}, torch::kInt)));
}

TEST(FusedCpuAttention, ACausalRowBlockNeverReadsTheKeysItCannotSee) {
  // With a causal mask alone the row blocks skip the columns above the diagonal. Keys and values
  // that no query can see (more keys than queries) hold NaN: the unfused path multiplies them
  // into every output (NaN × 0), the blocks never read them and give them zero gradients.
  const Case c{"unseen_keys", 1,     2, kCausalRowsPerBlock + 10, kCausalRowsPerBlock + 50, 8, true,
               Case::kNone,   false, 0};
  Inputs in = make_inputs(c);
  const auto unseen = torch::indexing::Slice(c.rows, c.cols);
  in.k.index_put_({torch::indexing::Slice(), torch::indexing::Slice(), unseen}, NAN);
  in.v.index_put_({torch::indexing::Slice(), torch::indexing::Slice(), unseen}, NAN);
  const double scale = 1.0 / std::sqrt(8.0);
  const Result fused = run(in, at::kFloat, [&](auto& q, auto& k, auto& v, auto& mask) {
    return fused_cpu_attention(q, k, v, mask, 0.1, true, scale);
  });
  EXPECT_TRUE(torch::isfinite(fused.out).all().item<bool>());
  EXPECT_TRUE(torch::isfinite(fused.grad_q).all().item<bool>());
  EXPECT_EQ(fused.grad_k.index({torch::indexing::Slice(), torch::indexing::Slice(), unseen})
                .abs()
                .sum()
                .item<double>(),
            0.0);
  EXPECT_EQ(fused.grad_v.index({torch::indexing::Slice(), torch::indexing::Slice(), unseen})
                .abs()
                .sum()
                .item<double>(),
            0.0);
  const Result unfused = run(in, at::kFloat, [&](auto& q, auto& k, auto& v, auto& mask) {
    return unfused_attention_with_dropout(q, k, v, mask, 0.1, true, scale);
  });
  EXPECT_FALSE(torch::isfinite(unfused.out).all().item<bool>());
}

/// Counts the bytes of live CPU tensors allocated while it is installed. The context is the data
/// pointer, as oneDNN's raw_allocate requires of libtorch's CPU allocator.
class CountingAllocator final : public c10::Allocator {
 public:
  static CountingAllocator& instance() {
    static auto* counting = new CountingAllocator();  // outlives every tensor it allocates
    return *counting;
  }
  c10::DataPtr allocate(size_t bytes) override {
    void* data = c10::alloc_cpu(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[data] = bytes;
    live_ += bytes;
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
  size_t live() {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_;
  }

 private:
  static void release(void* data) {
    CountingAllocator& self = instance();
    {
      std::lock_guard<std::mutex> lock(self.mutex_);
      const auto found = self.sizes_.find(data);
      if (found != self.sizes_.end()) {
        self.live_ -= found->second;
        self.sizes_.erase(found);
      }
    }
    c10::free_cpu(data);
  }
  std::mutex mutex_;
  std::unordered_map<void*, size_t> sizes_;
  size_t live_ = 0;
};

/// Installs an allocator as libtorch's CPU allocator for its lifetime.
class InstalledAllocator {
 public:
  explicit InstalledAllocator(c10::Allocator* allocator) : previous_(c10::GetCPUAllocator()) {
    c10::SetCPUAllocator(allocator, /*priority=*/0);
  }
  ~InstalledAllocator() { c10::SetCPUAllocator(previous_, /*priority=*/0); }

 private:
  c10::Allocator* previous_;
};

TEST(FusedCpuAttention, KeepsOneBitPerProbabilityForTheBackward) {
  const Case c{"memory", 1, 4, 256, 256, 64, true, Case::kNone, true, 0};
  const Inputs in = make_inputs(c);
  const at::Tensor q = in.q.detach().requires_grad_(), k = in.k.detach().requires_grad_(),
                   v = in.v.detach().requires_grad_();
  CountingAllocator& counting = CountingAllocator::instance();
  size_t fused = 0, unfused = 0;
  auto kept_by_graph = [&](bool through_fused) {
    const size_t before = counting.live();
    at::Tensor out = through_fused ? fused_cpu_attention(q, k, v, {}, 0.1, true, 0.125)
                                   : unfused_attention_with_dropout(q, k, v, {}, 0.1, true, 0.125);
    const size_t kept = counting.live() - before - out.nbytes();
    out.sum().backward();  // the graph works, then goes
    return kept;
  };
  {
    const InstalledAllocator installed(&counting);
    fused = kept_by_graph(true);
    unfused = kept_by_graph(false);
  }
  const size_t probabilities = 4 * 256 * 256 * sizeof(float);  // one [B, H, L, S] fp32 tensor
  std::printf("[ measured ] kept for the backward: fused %zu bytes, unfused %zu bytes\n", fused,
              unfused);
  // Fused: the mask's bits (one eighth of a byte per probability), nothing per probability
  // in fp32. Unfused: the probabilities, the byte mask and the dropped probabilities.
  EXPECT_LE(fused, probabilities / 32 + 4096);
  EXPECT_GE(unfused, 2 * probabilities);
}

// Heads are spread over the intra-op threads, one head per thread: the output and the gradients
// must be the one-thread ones, bit for bit (each head computed whole on one thread, written to
// its own slices).
TEST(FusedCpuAttention, HeadsOnTheIntraOpThreadsGiveTheOneThreadResult) {
  const Case c{"threads", 2, 3, 300, 300, 16, true, Case::kNone, true, 0};
  const Inputs in = make_inputs(c);
  const int threads_before = at::get_num_threads();
  auto attend = [](auto& q, auto& k, auto& v, auto& mask) {
    return fused_cpu_attention(q, k, v, mask, 0.3, true, 0.25);
  };
  at::set_num_threads(1);
  const Result one = run(in, at::kFloat, attend);
  at::set_num_threads(2);
  const Result two = run(in, at::kFloat, attend);
  at::set_num_threads(threads_before);
  EXPECT_TRUE(torch::equal(one.out, two.out));
  EXPECT_TRUE(torch::equal(one.grad_q, two.grad_q));
  EXPECT_TRUE(torch::equal(one.grad_k, two.grad_k));
  EXPECT_TRUE(torch::equal(one.grad_v, two.grad_v));
}

}  // namespace fused_cpu_attention_test
}  // namespace ctrainer
