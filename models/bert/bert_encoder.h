#pragma once
/// \file BertEncoder: the stack of BertLayers (state-dict names encoder.layer.<i>.*), with
/// optional gradient checkpointing of each layer.
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>

#include <ctrainer/models/bert/bert_config.h>
#include <ctrainer/models/bert/bert_layer.h>

namespace ctrainer {

class BertEncoderImpl : public torch::nn::Module {
 public:
  explicit BertEncoderImpl(const BertConfig& config);

  /// Runs every layer. When gradient checkpointing is on, the module is in training mode and grad
  /// mode is enabled, each layer keeps no activations and is recomputed during backward (same
  /// dropout masks, same gradients; see models/gradient_checkpointing.h).
  /// last_layer_query_length >= 0: the last layer computes only the first that many positions
  /// (a [CLS] classifier needs 1), so the result is [B, last_layer_query_length, H].
  at::Tensor forward(at::Tensor hidden, const at::Tensor& mask,
                     int64_t last_layer_query_length = -1);

  void set_gradient_checkpointing(bool enabled) { gradient_checkpointing_ = enabled; }
  bool gradient_checkpointing() const { return gradient_checkpointing_; }

  torch::nn::ModuleList layer{nullptr};

 private:
  bool gradient_checkpointing_ = false;
};
TORCH_MODULE(BertEncoder);

}  // namespace ctrainer
