#include <ctrainer/models/simple/linear_regression.h>

#include <torch/nn/functional/loss.h>

namespace ctrainer {

LinearRegression::LinearRegression(int64_t in_features, int64_t out_features) {
  linear = register_module("linear", torch::nn::Linear(in_features, out_features));
}

ModelOutput LinearRegression::forward(const Batch& batch) {
  ModelOutput out;
  out.logits = linear->forward(batch.at("x"));
  if (batch.contains("labels"))
    out.loss = torch::nn::functional::mse_loss(out.logits, batch.at("labels").view_as(out.logits));
  return out;
}

}  // namespace ctrainer
