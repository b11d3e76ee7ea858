#pragma once
/// \file LinearRegression: y = x W^T + b with an MSE loss; the smallest trainable Model.
#include <torch/nn/modules/linear.h>

#include <ctrainer/models/model.h>

namespace ctrainer {

/// Inputs "x" [B, in]; optional "labels" [B, out] (float) -> MSE loss.
class LinearRegression : public Model {
 public:
  LinearRegression(int64_t in_features, int64_t out_features);
  ModelOutput forward(const Batch& batch) override;
  torch::nn::Linear linear{nullptr};
};

}  // namespace ctrainer
