#pragma once
/// \file MLPClassifier: Linear-GELU-(LayerNorm)-Dropout-Linear with a cross-entropy loss.
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <ctrainer/models/model.h>

namespace ctrainer {

/// Inputs "x" [B, in]; optional integer "labels" [B] -> cross-entropy loss (ignore_index -100).
class MLPClassifier : public Model {
 public:
  MLPClassifier(int64_t in_features, int64_t hidden, int64_t num_classes, double dropout = 0.0,
                int64_t num_hidden_layers = 1);
  ModelOutput forward(const Batch& batch) override;

 private:
  torch::nn::ModuleList layers_;
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};

}  // namespace ctrainer
