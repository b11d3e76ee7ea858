#include <ctrainer/models/bert/bert_encoder.h>

#include <ATen/core/grad_mode.h>

#include <ctrainer/models/gradient_checkpointing.h>

namespace ctrainer {

BertEncoderImpl::BertEncoderImpl(const BertConfig& c) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layer->push_back(BertLayer(c));
}

at::Tensor BertEncoderImpl::forward(at::Tensor hidden, const at::Tensor& mask,
                                    int64_t last_layer_query_length) {
  // HF checkpoints only while training: in eval there is no backward to save memory for.
  const bool recompute = gradient_checkpointing_ && is_training() && at::GradMode::is_enabled();
  for (std::size_t i = 0; i < layer->size(); ++i) {
    auto block = layer->ptr<BertLayerImpl>(i);
    const int64_t queries = i + 1 == layer->size() ? last_layer_query_length : -1;
    if (recompute) {
      hidden = checkpoint(
          [block, mask, queries](const at::Tensor& x) { return block->forward(x, mask, queries); },
          hidden, block->parameters());
    } else {
      hidden = block->forward(hidden, mask, queries);
    }
  }
  return hidden;
}

}  // namespace ctrainer
