// Scenario gradient_checkpointing: peak memory and time of one BertForSequenceClassification
// training step (forward + backward, dropout on) with and without gradient checkpointing,
// measured alternately in one process. Memory is the rise of the resident set size during the
// step: the kernel's high-water mark (VmHWM) is reset to the current RSS before the step
// (/proc/self/clear_refs), and glibc is told to serve every tensor-sized block with mmap and to
// hand it back on free, so RSS follows the live tensors instead of the allocator's cache.
// metrics.memory_saving = 1 - checkpointed peak rise / plain peak rise; metrics.time_ratio =
// checkpointed step time / plain step time (~1.3 expected: one extra forward). The rise includes
// the parameter gradients (metrics.parameter_gradients_mb), which both paths allocate.
#include <malloc.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/trainer/runtime/cpu_runtime.h>

#include "bench_report.h"

namespace ctrainer::bench {
namespace {

using Clock = std::chrono::steady_clock;

/// A /proc/self/status field in bytes ("VmRSS", "VmHWM").
int64_t status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  throw std::runtime_error("gradient_checkpointing: /proc/self/status has no " + field);
}

/// Resets VmHWM to the current RSS (Linux >= 4.0).
void reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  if (!out) throw std::runtime_error("gradient_checkpointing: cannot write /proc/self/clear_refs");
}

struct StepMeasure {
  double seconds;
  int64_t peak_rise_bytes;
  double loss;
};

StepMeasure measure_step(BertForSequenceClassification& model, const Batch& batch,
                         bool checkpointing) {
  model.gradient_checkpointing_enable(checkpointing);
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();  // same start each time
  at::manual_seed(42);
  const int64_t before = status_bytes("VmRSS");
  reset_peak_rss();
  const auto start = Clock::now();
  ModelOutput out = model.forward(batch);
  out.loss.backward();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const int64_t peak = status_bytes("VmHWM");
  return {seconds, peak - before, out.loss.item<double>()};
}

BenchResult run_gradient_checkpointing(const BenchOptions& options) {
  // Every allocation of 64 KiB and more is mmapped and unmapped on free (a fixed threshold also
  // stops glibc from raising it dynamically), so freed activations leave the RSS at once.
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  mallopt(M_TRIM_THRESHOLD, 64 * 1024);
  configure_intra_op_threads(/*local_world_size=*/1);  // as the Trainer does

  BertConfig config;  // bert-base shape
  int64_t batch_size = 8, seq_len = 128;
  std::string shape = "bert-base: hidden 768, 12 layers, 12 heads, ffn 3072";
  if (options.quick) {
    config.hidden_size = 128;
    config.num_hidden_layers = 4;
    config.num_attention_heads = 4;
    config.intermediate_size = 512;
    batch_size = 4;
    seq_len = 64;
    shape = "quick: hidden 128, 4 layers, 4 heads, ffn 512";
  }
  at::manual_seed(1234);
  BertForSequenceClassification model(config);
  model.train();
  Batch batch{{"input_ids", at::randint(1, config.vocab_size, {batch_size, seq_len}, at::kLong)},
              {"attention_mask", at::ones({batch_size, seq_len}, at::kLong)},
              {"labels", at::randint(0, 2, {batch_size}, at::kLong)}};

  measure_step(model, batch, false);  // warm-up: thread pools, first-touch of the weights
  measure_step(model, batch, true);
  std::vector<double> plain_s, ckpt_s, plain_mb, ckpt_mb;
  double plain_loss = 0, ckpt_loss = 0;
  for (int64_t r = 0; r < options.rounds; ++r) {
    StepMeasure p = measure_step(model, batch, false);
    StepMeasure c = measure_step(model, batch, true);
    plain_s.push_back(p.seconds);
    ckpt_s.push_back(c.seconds);
    plain_mb.push_back(static_cast<double>(p.peak_rise_bytes) / 1e6);
    ckpt_mb.push_back(static_cast<double>(c.peak_rise_bytes) / 1e6);
    plain_loss = p.loss;
    ckpt_loss = c.loss;
  }
  if (plain_loss != ckpt_loss)
    throw std::runtime_error(
        fmt::format("gradient_checkpointing: losses differ (plain {} vs checkpointed {})",
                    plain_loss, ckpt_loss));

  BenchResult result;
  result.scenario = "gradient_checkpointing";
  result.config = {{"model", shape},
                   {"batch_size", batch_size},
                   {"seq_len", seq_len},
                   {"rounds", options.rounds},
                   {"parameters", model.num_parameters()},
                   {"threads", at::get_num_threads()}};
  const double plain_peak = median(plain_mb), ckpt_peak = median(ckpt_mb);
  const double plain_time = median(plain_s), ckpt_time = median(ckpt_s);
  // Both paths allocate every parameter gradient during backward; that part cannot shrink.
  int64_t grad_bytes = 0;
  for (const auto& p : model.parameters()) grad_bytes += p.numel() * p.element_size();
  result.metrics = {{"parameter_gradients_mb", static_cast<double>(grad_bytes) / 1e6},
                    {"plain_peak_rise_mb", plain_peak},
                    {"checkpointed_peak_rise_mb", ckpt_peak},
                    {"memory_saving", 1.0 - ckpt_peak / plain_peak},
                    {"plain_step_seconds", plain_time},
                    {"checkpointed_step_seconds", ckpt_time},
                    {"time_ratio", ckpt_time / plain_time}};
  result.header = {"path", "peak RSS rise during the step (MB)", "step time (s)"};
  result.rows.push_back(
      {{"plain", fmt::format("{:.1f}", plain_peak), fmt::format("{:.3f}", plain_time)}});
  result.rows.push_back({{"gradient checkpointing", fmt::format("{:.1f}", ckpt_peak),
                          fmt::format("{:.3f}", ckpt_time)}});
  return result;
}

}  // namespace

Scenario gradient_checkpointing_scenario() {
  return {"gradient_checkpointing",
          "BERT training step: peak memory and time with/without gradient checkpointing",
          run_gradient_checkpointing};
}

}  // namespace ctrainer::bench
