#include "vs_hf/vs_hf_flops.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <stdexcept>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#ifdef CTRAINER_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#include <nlohmann/json.hpp>

#include <ctrainer/models/linear_kernel.h>

namespace ctrainer::bench::vs_hf {

ModelShape read_model_shape(const std::string& config_json) {
  std::ifstream in(config_json);
  if (!in) throw std::runtime_error("cannot read the model config " + config_json);
  const auto config = nlohmann::json::parse(in);
  ModelShape shape;
  try {
    shape.hidden = config.at("hidden_size").get<int64_t>();
    shape.layers = config.at("num_hidden_layers").get<int64_t>();
    shape.intermediate = config.at("intermediate_size").get<int64_t>();
  } catch (const std::exception& error) {
    throw std::runtime_error(config_json +
                             " lacks a BERT size (hidden_size, num_hidden_layers, "
                             "intermediate_size): " +
                             error.what());
  }
  return shape;
}

double training_flops_per_sample(const ModelShape& m, int64_t seq) {
  const double s = static_cast<double>(seq), h = static_cast<double>(m.hidden),
               l = static_cast<double>(m.layers), i = static_cast<double>(m.intermediate),
               c = static_cast<double>(m.labels);
  const double encoder_weights = l * (4 * h * h + 2 * h * i);
  return 6 * s * encoder_weights + 12 * l * s * s * h + 6 * (h * h + c * h);
}

double ctrainer_training_flops_per_sample(const ModelShape& m, int64_t seq) {
  const double s = static_cast<double>(seq), h = static_cast<double>(m.hidden),
               l = static_cast<double>(m.layers), i = static_cast<double>(m.intermediate),
               c = static_cast<double>(m.labels);
  const double layer_weights = 4 * h * h + 2 * h * i;
  const double last_layer = (s - 1) * 2 * h * h + layer_weights;  // K, V of every token; [CLS]
  return 6 * ((l - 1) * s * layer_weights + last_layer) + 12 * (l - 1) * s * s * h +
         12 * s * h + 6 * (h * h + c * h);
}

std::string flops_formula() {
  return "training FLOPs per sample = 6*s*L*(4h^2 + 2h*i) [encoder matmul weights, 2 forward + 4 "
         "backward per weight per token] + 12*L*s^2*h [QK^T and scores*V, forward + backward] + "
         "6*(h^2 + 2h) [pooler and classifier on [CLS]]; s = max_seq_length (padded), h hidden, "
         "L layers, i intermediate; embeddings, biases, LayerNorm, softmax, GELU, optimizer not "
         "counted. ctrainer's last layer computes the [CLS] row alone: 6*[(L-1)*s*(4h^2 + "
         "2h*i) + (s-1)*2h^2 + 4h^2 + 2h*i] + 12*(L-1)*s^2*h + 12*s*h + 6*(h^2 + 2h). Achieved "
         "FLOP/s = the FLOPs a side computes per sample x train_samples_per_second (train()'s "
         "wall time, data loading included)";
}

GemmPeak measure_gemm_peak(bool cuda, bool bf16, int threads) {
  const int64_t m = cuda ? 8192 : 1024, k = cuda ? 8192 : 768, n = cuda ? 8192 : 3072;
  const auto options = at::TensorOptions()
                           .dtype(bf16 ? at::kBFloat16 : at::kFloat)
                           .device(cuda ? at::kCUDA : at::kCPU);
  const int previous_threads = at::get_num_threads();
  if (!cuda) at::set_num_threads(threads);
  constexpr int kWarmup = 3, kMeasured = 20;
  at::Tensor a = at::randn({m, k}, options), b = at::randn({k, n}, options);
  at::Tensor c = at::empty({m, n}, options);
  const auto best_seconds = [&](const auto& product) {
    double best = std::numeric_limits<double>::infinity();
    for (int rep = 0; rep < kWarmup + kMeasured; ++rep) {
      if (cuda) torch::cuda::synchronize();
      const auto start = std::chrono::steady_clock::now();
      product();
      if (cuda) torch::cuda::synchronize();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (rep >= kWarmup) best = std::min(best, seconds);
    }
    return best;
  };
  const double flops = 2.0 * static_cast<double>(m * k * n);
  const double mm_flops_per_s = flops / best_seconds([&] { at::mm_out(c, a, b); });
  // On the CPU the models' products run on ctrainer::linear's kernel (oneDNN in fp32), which on
  // some processors is twice MKL's at::mm: the machine's GEMM is the faster of the two, so that
  // a fraction of it is never flattered by a slow reference.
  const bool linear_differs = !cuda && linear_kernel_for(a, b.t()) != LinearKernel::kAten;
  const double linear_flops_per_s =
      linear_differs ? flops / best_seconds([&] { c = ctrainer::linear(a, b.t()); }) : 0.0;
  if (!cuda) at::set_num_threads(previous_threads);
  a.reset();
  b.reset();
  c.reset();
#ifdef CTRAINER_WITH_CUDA
  // The sides train on the same GPU while this process waits: give the matrices back (only
  // the CUDA context stays, a few hundred MB).
  if (cuda) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  GemmPeak peak;
  peak.flops_per_s = std::max(mm_flops_per_s, linear_flops_per_s);
  peak.what = fmt::format(
      "{}x{} by {}x{}, {}, {}{}, best of {} after {} warm-ups: at::mm {:.1f} GFLOP/s{}", m, k, k, n,
      bf16 ? "bf16" : "fp32", cuda ? "cuda" : "cpu",
      cuda ? "" : fmt::format(" with {} threads", threads), kMeasured, kWarmup,
      mm_flops_per_s / 1e9,
      linear_differs
          ? fmt::format(", oneDNN (ctrainer::linear) {:.1f} GFLOP/s", linear_flops_per_s / 1e9)
          : std::string());
  return peak;
}

}  // namespace ctrainer::bench::vs_hf
