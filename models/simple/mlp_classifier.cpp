#include <ctrainer/models/simple/mlp_classifier.h>

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>

namespace ctrainer {

MLPClassifier::MLPClassifier(int64_t in_features, int64_t hidden, int64_t num_classes,
                             double dropout, int64_t num_hidden_layers) {
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_hidden_layers; ++i)
    layers_->push_back(torch::nn::Linear(i == 0 ? in_features : hidden, hidden));
  norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
  dropout_ = register_module("dropout", torch::nn::Dropout(dropout));
  classifier_ = register_module("classifier", torch::nn::Linear(hidden, num_classes));
}

ModelOutput MLPClassifier::forward(const Batch& batch) {
  at::Tensor h = batch.at("x");
  for (const auto& layer : *layers_)
    h = torch::nn::functional::gelu(layer->as<torch::nn::Linear>()->forward(h));
  h = dropout_->forward(norm_->forward(h));
  ModelOutput out;
  out.logits = classifier_->forward(h);
  if (batch.contains("labels"))
    out.loss = torch::nn::functional::cross_entropy(out.logits, batch.at("labels"));
  return out;
}

}  // namespace ctrainer
