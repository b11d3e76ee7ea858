#pragma once
/// \file BertModel: embeddings, encoder and pooler (HF modeling_bert.BertModel), plus HF's weight
/// initialisation and attention-mask conversion shared by the BERT heads.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/bert/bert_config.h>
#include <ctrainer/models/bert/bert_embeddings.h>
#include <ctrainer/models/bert/bert_encoder.h>

namespace ctrainer {

/// HF's attention mask conversion: mask [B, T] (1 = attend, 0 = padding) -> additive
/// [B, 1, 1, T] of `dtype`, 0 where attended and the dtype's lowest finite value (torch.finfo
/// .min) where masked. An undefined mask gives an undefined result (attend everywhere).
at::Tensor extended_attention_mask(const at::Tensor& mask, at::ScalarType dtype);

/// HF BertPreTrainedModel._init_weights over every sub-module of `module`: Linear and Embedding
/// weights ~ N(0, initializer_range) from the global generator, biases zero, the padding row of
/// an Embedding zero, LayerNorm weight one and bias zero.
void init_bert_weights(torch::nn::Module& module, double initializer_range);

/// HF's initialisation of only the parameters a checkpoint lacked (from_pretrained's missing
/// and mismatched keys, `model`'s state-dict names), leaving loaded ones as they are: a Linear's
/// or Embedding's weight ~ N(0, initializer_range) (the padding row zeroed), a bias zeroed, a
/// LayerNorm's weight one. Draws in module order, as HF's post-order walk does for leaves.
void init_missing_bert_weights(torch::nn::Module& model, const std::vector<std::string>& keys,
                               double initializer_range);

/// tanh(dense(hidden[:, 0])): the [CLS] summary used by the classification head.
class BertPoolerImpl : public torch::nn::Module {
 public:
  explicit BertPoolerImpl(const BertConfig& config);
  at::Tensor forward(const at::Tensor& hidden);

  AdaptableLinear dense{nullptr};
};
TORCH_MODULE(BertPooler);

/// What BertModel returns.
struct BertModelOutput {
  at::Tensor last_hidden_state;  ///< [B, T, H]
  at::Tensor pooler_output;      ///< [B, H]; undefined without a pooling layer
};

/// The bare BERT encoder. Children "embeddings", "encoder", "pooler" (HF names, so its state
/// dict is HF's BertModel state dict; inside a head model it is registered as "bert").
class BertModelImpl : public torch::nn::Module {
 public:
  /// `initialise_weights` false skips HF's initialisation (libtorch's module defaults stay)
  /// for weights a checkpoint is about to replace.
  explicit BertModelImpl(const BertConfig& config, bool add_pooling_layer = true,
                         bool initialise_weights = true);

  /// input_ids [B, T] int64; attention_mask [B, T] (1 = token, 0 = padding) or undefined (all
  /// tokens); token_type_ids [B, T] or undefined (zeros).
  BertModelOutput forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                          const at::Tensor& token_type_ids = {});

  /// forward(...).pooler_output without the rest of the last hidden state: the last encoder
  /// layer computes only position 0, the one row the pooler reads (keys and values still come
  /// from every position). Same values and gradients up to float rounding, for about
  /// 1 / num_hidden_layers less encoder work; what a [CLS] classifier needs. Requires the
  /// pooling layer.
  at::Tensor pooled_output(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                           const at::Tensor& token_type_ids = {});

  /// Recompute each encoder layer during backward instead of storing its activations.
  void set_gradient_checkpointing(bool enabled) { encoder->set_gradient_checkpointing(enabled); }

  const BertConfig& config() const { return config_; }

  BertEmbeddings embeddings{nullptr};
  BertEncoder encoder{nullptr};
  BertPooler pooler{nullptr};

 private:
  /// Embeddings, mask conversion and the encoder (see BertEncoderImpl::forward).
  at::Tensor encode(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                    const at::Tensor& token_type_ids, int64_t last_layer_query_length);

  BertConfig config_;
};
TORCH_MODULE(BertModel);

}  // namespace ctrainer
