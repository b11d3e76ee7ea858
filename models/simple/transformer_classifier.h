#pragma once
/// \file TransformerClassifier: token embeddings + a torch TransformerEncoder + mean pooling +
/// a linear head. A small sequence model for tests and benchmarks.
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/transformer.h>

#include <ctrainer/models/model.h>

namespace ctrainer {

/// Configuration of TransformerClassifier.
struct TransformerClassifierConfig {
  int64_t vocab_size = 1000;
  int64_t max_positions = 128;
  int64_t hidden_size = 64;
  int64_t num_layers = 2;
  int64_t num_heads = 4;
  int64_t intermediate_size = 128;
  double dropout = 0.1;
  int64_t num_labels = 2;
};

/// Inputs "input_ids" [B, T] (int64), optional "attention_mask" [B, T] (1 = token, 0 = padding)
/// and integer "labels" [B] -> cross-entropy loss.
class TransformerClassifier : public Model {
 public:
  explicit TransformerClassifier(const TransformerClassifierConfig& config);
  ModelOutput forward(const Batch& batch) override;

 private:
  torch::nn::Embedding tokens_{nullptr};
  torch::nn::Embedding positions_{nullptr};
  torch::nn::TransformerEncoder encoder_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};

}  // namespace ctrainer
