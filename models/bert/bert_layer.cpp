#include <ctrainer/models/bert/bert_layer.h>

#include <ctrainer/models/activations.h>

namespace ctrainer {

BertIntermediateImpl::BertIntermediateImpl(const BertConfig& c) : activation_(c.hidden_act) {
  dense = register_module("dense", AdaptableLinear(c.hidden_size, c.intermediate_size));
}

at::Tensor BertIntermediateImpl::forward(const at::Tensor& hidden) {
  return apply_activation(activation_, dense->forward(hidden));
}

BertOutputImpl::BertOutputImpl(const BertConfig& c) {
  dense = register_module("dense", AdaptableLinear(c.intermediate_size, c.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps)));
  dropout = register_module("dropout", Dropout(c.hidden_dropout_prob));
}

at::Tensor BertOutputImpl::forward(const at::Tensor& intermediate, const at::Tensor& input) {
  return LayerNorm->forward(dropout->forward(dense->forward(intermediate)) + input);
}

BertLayerImpl::BertLayerImpl(const BertConfig& c) {
  attention = register_module("attention", BertAttention(c));
  intermediate = register_module("intermediate", BertIntermediate(c));
  output = register_module("output", BertOutput(c));
}

at::Tensor BertLayerImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                  int64_t query_length) {
  auto hooks = hook_point_.enter();
  at::Tensor attended = attention->forward(hidden, mask, query_length);
  return hooks.finish(output->forward(intermediate->forward(attended), attended));
}

}  // namespace ctrainer
