// Scenario linear_kernel: the fp32 CPU products of the models' layers through at::linear (MKL's
// sgemm in the torch wheel) and through ctrainer::linear (oneDNN's matmul; models/linear_kernel.h),
// alternating, 2 intra-op threads: GFLOP/s of the forward alone (no graph, as in generation) and
// of a training step's three products (forward, input gradient, weight gradient), the speedup,
// and how far the two kernels' outputs are apart (the same fp32 sums in another order).
// metrics.<shape>.training_speedup / inference_speedup are the headlines.
#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/autograd.h>

#include <ctrainer/models/linear_kernel.h>

#include "bench_report.h"

namespace ctrainer::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kThreads = 2;

struct ProductShape {
  std::string name;  ///< where the models compute it
  int64_t rows, in, out;
};

std::vector<ProductShape> shapes(bool quick) {
  if (quick) return {{"quick", 64, 32, 48}};
  return {
      {"gpt2_6x512_c_attn", 2048, 512, 1536},      // run_clm's 6 x 512 GPT-2, batch 8 x 256
      {"gpt2_6x512_mlp_in", 2048, 512, 2048},      // its c_fc
      {"gpt2_6x512_mlp_out", 2048, 2048, 512},     // its mlp c_proj
      {"gpt2_6x512_lm_head", 2048, 512, 8192},     // tied head, the bundled 8k vocabulary
      {"bert_base_ffn_in", 1024, 768, 3072},       // BERT-base, batch 8 x 128
      {"t5_small_decode_lm_head", 1, 512, 32128},  // one greedy step of T5-small, batch 1
      {"t5_small_decode_ffn", 1, 512, 2048},
      {"t5_small_beam4x8_lm_head", 32, 512, 32128},  // beam search 4 at batch 8
  };
}

// Seconds of one call of `product`, median over rounds; the two kernels alternate round by round.
struct Timing {
  std::vector<double> aten, onednn;
};

template <typename Product>
double seconds_of(const Product& product) {
  const auto start = Clock::now();
  product();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

BenchResult run_linear_kernel(const BenchOptions& options) {
  const int previous_threads = at::get_num_threads();
  at::set_num_threads(kThreads);
  BenchResult result;
  result.scenario = "linear_kernel";
  result.header = {"product (rows x in -> out)", "kernel",       "inference GFLOP/s",
                   "training GFLOP/s",           "speedup inf.", "speedup train"};
  result.config = {{"threads", kThreads},
                   {"rounds", options.rounds},
                   {"dtype", "fp32"},
                   {"inference", "y = x W^T + b under InferenceMode (2 rows x in x out FLOPs)"},
                   {"training",
                    "forward with x, W, b requiring grad, then backward: dx, dW, db "
                    "(6 rows x in x out FLOPs)"},
                   {"alternating", true},
                   {"aten", "at::linear (MKL sgemm in the torch wheel)"},
                   {"onednn", "ctrainer::linear (mkldnn::_linear_pointwise, oneDNN matmul)"}};
  const bool onednn =
      linear_kernel_for(at::ones({2, 2}), at::ones({2, 2})) == LinearKernel::kOneDnn;
  result.config["onednn_in_use"] = onednn;
  for (const ProductShape& shape : shapes(options.quick)) {
    at::manual_seed(0);
    const at::Tensor x = at::randn({shape.rows, shape.in});
    const at::Tensor w = at::randn({shape.out, shape.in}) / std::sqrt(double(shape.in));
    const at::Tensor b = at::randn({shape.out});
    const at::Tensor upstream = at::randn({shape.rows, shape.out});
    const double flops = 2.0 * double(shape.rows * shape.in * shape.out);
    const auto infer = [&](bool ours) {
      c10::InferenceMode guard;
      return ours ? ctrainer::linear(x, w, b) : at::linear(x, w, b);
    };
    const auto train = [&](bool ours) {
      const at::Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_(),
                       bg = b.detach().requires_grad_();
      const at::Tensor y = ours ? ctrainer::linear(xg, wg, bg) : at::linear(xg, wg, bg);
      y.backward(upstream);
      return wg.grad();
    };
    const double max_difference = (infer(true) - infer(false)).abs().max().item<double>() /
                                  infer(false).abs().max().item<double>();
    Timing inference, training;
    const int64_t calls = shape.rows == 1 ? 20 : 1;  // a decoding step's product is short
    for (int64_t round = -1; round < options.rounds; ++round) {  // round -1: warm-up
      for (const bool ours : {round % 2 == 0, round % 2 != 0}) {
        const double s_inf = seconds_of([&] {
                               for (int64_t c = 0; c < calls; ++c) infer(ours);
                             }) /
                             double(calls);
        const double s_train = seconds_of([&] {
                                 for (int64_t c = 0; c < calls; ++c) train(ours);
                               }) /
                               double(calls);
        if (round < 0) continue;
        (ours ? inference.onednn : inference.aten).push_back(s_inf);
        (ours ? training.onednn : training.aten).push_back(s_train);
      }
    }
    const double inf_aten = flops / median(inference.aten) / 1e9;
    const double inf_ours = flops / median(inference.onednn) / 1e9;
    const double train_aten = 3 * flops / median(training.aten) / 1e9;
    const double train_ours = 3 * flops / median(training.onednn) / 1e9;
    result.metrics[shape.name] = {{"rows", shape.rows},
                                  {"in", shape.in},
                                  {"out", shape.out},
                                  {"aten_inference_gflops", inf_aten},
                                  {"onednn_inference_gflops", inf_ours},
                                  {"aten_training_gflops", train_aten},
                                  {"onednn_training_gflops", train_ours},
                                  {"inference_speedup", inf_ours / inf_aten},
                                  {"training_speedup", train_ours / train_aten},
                                  {"max_relative_difference", max_difference}};
    const std::string label =
        fmt::format("{} ({} x {} -> {})", shape.name, shape.rows, shape.in, shape.out);
    result.rows.push_back({{label, "at::linear", fmt::format("{:.1f}", inf_aten),
                            fmt::format("{:.1f}", train_aten), "", ""}});
    result.rows.push_back(
        {{"", "ctrainer::linear", fmt::format("{:.1f}", inf_ours),
          fmt::format("{:.1f}", train_ours), fmt::format("{:.2f}x", inf_ours / inf_aten),
          fmt::format("{:.2f}x", train_ours / train_aten)}});
  }
  at::set_num_threads(previous_threads);
  return result;
}

}  // namespace

Scenario linear_kernel_scenario() {
  return {"linear_kernel",
          "fp32 CPU Linear products: at::linear (MKL) vs ctrainer::linear (oneDNN), GFLOP/s",
          run_linear_kernel};
}

}  // namespace ctrainer::bench
