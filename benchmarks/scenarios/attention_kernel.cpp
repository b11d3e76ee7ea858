// Scenario attention_kernel: attention with dropout in training on the CPU (fp32, 2 intra-op
// threads) through the all-heads path (models/attention.h: unfused_attention_with_dropout) and
// the one-head-at-a-time path (models/fused_cpu_attention.h), alternating: milliseconds of a
// forward and backward, their ratio, what each keeps for the backward, and how far the outputs
// are apart (the same dropout mask; products and softmax in another order). The shapes range
// from BERT-base's 128-token heads to GPT-2 small's 1024-token ones, which is where
// kFusedAttentionMinScoresPerHead comes from. metrics.<shape>.fused_time_ratio is the headline.
#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/autograd.h>

#include <ctrainer/models/attention.h>
#include <ctrainer/models/fused_cpu_attention.h>

#include "bench_report.h"

namespace ctrainer::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kThreads = 2;
constexpr double kDropout = 0.1;

struct AttentionShape {
  std::string name;  ///< which model's attention layer
  int64_t batch, heads, length, width;
  bool causal;
};

std::vector<AttentionShape> shapes(bool quick) {
  if (quick) return {{"quick", 1, 2, 32, 8, true}};
  return {
      {"gpt2_124m_1024", 1, 12, 1024, 64, true},  // clm_vs_hf's GPT-2 small, batch 1
      {"gpt2_512", 4, 12, 512, 64, true},
      {"gpt2_6x512_256", 8, 8, 256, 64, true},    // clm_vs_hf's 6 x 512 GPT-2, batch 8
      {"bert_base_128", 32, 12, 128, 64, false},  // BERT-base fine-tuning, batch 32
      {"small_64", 16, 4, 64, 16, false},
  };
}

BenchResult run_attention_kernel(const BenchOptions& options) {
  const int previous_threads = at::get_num_threads();
  at::set_num_threads(kThreads);
  BenchResult result;
  result.scenario = "attention_kernel";
  result.header = {"shape (batch x heads x tokens x width)",
                   "unfused ms",
                   "fused ms",
                   "fused / unfused",
                   "kept MiB unfused",
                   "kept MiB fused"};
  result.config = {{"threads", kThreads},
                   {"rounds", options.rounds},
                   {"dtype", "fp32"},
                   {"dropout", kDropout},
                   {"alternating", true},
                   {"measured",
                    "one forward and backward of q, k, v views into a fused qkv "
                    "projection (as GPT-2 passes them); median over rounds"},
                   {"unfused",
                    "unfused_attention_with_dropout: at::matmul over all heads, "
                    "softmax, ctrainer::dropout, at::matmul"},
                   {"fused",
                    "fused_cpu_attention: one head at a time, products on oneDNN, "
                    "scores recomputed in the backward, the mask kept as bits"},
                   {"kept",
                    "bytes of the [B, H, L, S] tensors each path keeps for the backward "
                    "(unfused: probabilities, byte mask, dropped probabilities; fused: "
                    "the mask's bits)"},
                   {"min_scores_per_head", kFusedAttentionMinScoresPerHead}};
  for (const AttentionShape& shape : shapes(options.quick)) {
    at::manual_seed(0);
    const int64_t width = shape.heads * shape.width;
    const at::Tensor qkv = at::randn({shape.batch, shape.length, 3 * width});
    const auto heads = [&](int64_t part) {
      return qkv.narrow(2, part * width, width)
          .view({shape.batch, shape.length, shape.heads, shape.width})
          .transpose(1, 2);
    };
    const at::Tensor upstream = at::randn({shape.batch, shape.heads, shape.length, shape.width});
    const double scale = 1.0 / std::sqrt(static_cast<double>(shape.width));
    const auto attend = [&](bool fused, bool with_graph) {
      const at::Tensor q = heads(0).detach().requires_grad_(with_graph),
                       k = heads(1).detach().requires_grad_(with_graph),
                       v = heads(2).detach().requires_grad_(with_graph);
      at::manual_seed(1);
      at::Tensor out =
          fused ? fused_cpu_attention(q, k, v, {}, kDropout, shape.causal, scale)
                : unfused_attention_with_dropout(q, k, v, {}, kDropout, shape.causal, scale);
      if (with_graph) out.backward(upstream);
      return out.detach();
    };
    const double max_difference =
        (attend(true, false) - attend(false, false)).abs().max().item<double>();
    std::vector<double> fused_ms, unfused_ms;
    for (int64_t round = -1; round < options.rounds; ++round) {  // round -1: warm-up
      for (const bool fused : {round % 2 == 0, round % 2 != 0}) {
        const auto start = Clock::now();
        attend(fused, true);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        if (round >= 0) (fused ? fused_ms : unfused_ms).push_back(ms);
      }
    }
    const double scores = double(shape.batch * shape.heads * shape.length * shape.length);
    const double kept_unfused_mib = scores * (4 + 1 + 4) / (1 << 20);
    const double kept_fused_mib =
        double(shape.batch * shape.heads * shape.length * ((shape.length + 7) / 8)) / (1 << 20);
    const double ratio = median(fused_ms) / median(unfused_ms);
    result.metrics[shape.name] = {{"batch", shape.batch},
                                  {"heads", shape.heads},
                                  {"length", shape.length},
                                  {"width", shape.width},
                                  {"causal", shape.causal},
                                  {"scores_per_head", shape.length * shape.length},
                                  {"unfused_ms", median(unfused_ms)},
                                  {"fused_ms", median(fused_ms)},
                                  {"fused_time_ratio", ratio},
                                  {"kept_mib_unfused", kept_unfused_mib},
                                  {"kept_mib_fused", kept_fused_mib},
                                  {"attention_takes_fused_path",
                                   shape.length * shape.length >= kFusedAttentionMinScoresPerHead},
                                  {"max_abs_difference", max_difference}};
    result.rows.push_back(
        {{fmt::format("{} ({} x {} x {} x {})", shape.name, shape.batch, shape.heads, shape.length,
                      shape.width),
          fmt::format("{:.1f}", median(unfused_ms)), fmt::format("{:.1f}", median(fused_ms)),
          fmt::format("{:.2f}x", ratio), fmt::format("{:.1f}", kept_unfused_mib),
          fmt::format("{:.2f}", kept_fused_mib)}});
  }
  at::set_num_threads(previous_threads);
  return result;
}

}  // namespace

Scenario attention_kernel_scenario() {
  return {"attention_kernel",
          "CPU attention with dropout, fp32: all heads at once vs one head at a time (fused)",
          run_attention_kernel};
}

}  // namespace ctrainer::bench
