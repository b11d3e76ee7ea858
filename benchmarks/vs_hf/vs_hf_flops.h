#pragma once
/// \file FLOP accounting of `ctrainer-bench vs_hf`: the analytic training FLOPs of a BERT
/// sequence classifier per sample, and the machine's matmul throughput measured in the bench
/// process (the yardstick the achieved FLOP/s are divided by).
#include <cstdint>
#include <string>

namespace ctrainer::bench::vs_hf {

/// The sizes the FLOP count needs, from a HF config.json.
struct ModelShape {
  int64_t hidden = 0, layers = 0, intermediate = 0, labels = 2;
};

/// Reads hidden_size, num_hidden_layers and intermediate_size of `config_json` (labels: 2).
ModelShape read_model_shape(const std::string& config_json);

/// Training FLOPs (forward + backward) of one sample of `seq` tokens:
///   6·s·L·(4h² + 2h·i)  +  12·L·s²·h  +  6·(h² + 2h)
/// - 6 FLOPs per weight per token for the encoder's matmul weights (Q, K, V, attention output:
///   4h²; FFN in and out: 2h·i per layer): 2 forward (multiply-add), 4 backward (gradients of
///   the input and of the weight);
/// - attention's two s×s products (QKᵀ and scores·V: 2·s²·h each forward per layer) times 3
///   for forward + backward: 12·L·s²·h;
/// - pooler (h²) and classifier (2h) on the [CLS] token only.
/// Not counted: embeddings (lookups), biases, LayerNorm, softmax, GELU, dropout, the optimizer
/// (all O(s·h) or O(params), a few percent at these sizes). Every token is counted, padding
/// included: with padding to max_seq_length that is what the step computes.
double training_flops_per_sample(const ModelShape& shape, int64_t seq);

/// What ctrainer's BertForSequenceClassification computes of that: its last encoder layer runs
/// the [CLS] row alone (the only row the pooler reads), so there the other s-1 tokens cost only
/// their keys and values (2h² weights) and attention has one query row:
///   6·[(L-1)·s·(4h² + 2h·i) + (s-1)·2h² + (4h² + 2h·i)]  +  12·(L-1)·s²·h + 12·s·h
///   +  6·(h² + 2h)
double ctrainer_training_flops_per_sample(const ModelShape& shape, int64_t seq);

/// The formula above as text, for the report's config.
std::string flops_formula();

/// The best-of-several throughput of one matmul on the training device and dtype.
struct GemmPeak {
  double flops_per_s = 0;
  std::string what;  ///< shape, dtype, device, threads, repetitions
};

/// fp32 (bf16 with `bf16`) products of 1024×768 by 768×3072 (BERT-base's FFN on 8 sequences of
/// 128 tokens) on the CPU with `threads` intra-op threads; on CUDA, 8192×8192 by 8192×8192
/// (large enough to reach the GPU's peak). Best of 20 after 3 warm-ups; on the CPU the faster of
/// at::mm and ctrainer::linear's kernel (the one the models run), both named in `what`.
GemmPeak measure_gemm_peak(bool cuda, bool bf16, int threads);

}  // namespace ctrainer::bench::vs_hf
