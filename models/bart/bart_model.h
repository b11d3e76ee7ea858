#pragma once
/// \file BART's encoder and decoder (transformers' BartModel): token embeddings (scaled by
/// sqrt(d_model) with scale_embedding) plus learned positions offset by 2, a layer norm on the
/// embeddings, then post-layer-norm blocks of self-attention, (decoder) cross-attention and a
/// feed-forward, all with biases. Parameter names are HF's state-dict keys (shared.weight,
/// encoder.layers.0.self_attn.q_proj.weight, decoder.layers.0.encoder_attn_layer_norm.bias, ...).
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <ctrainer/core/forward_hooks.h>
#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/bart/bart_config.h>
#include <ctrainer/models/dropout.h>
#include <ctrainer/models/kv_cache.h>

namespace ctrainer {

/// BartAttention: q/k/v/out projections with bias, softmax(q k^T / sqrt(head_dim)). `mask` is
/// boolean (true = attend) or undefined, with `is_causal` for SDPA's causal path. Self-attention
/// with a `cache` appends its keys and values there; cross-attention (`key_value_states`) keeps
/// its keys and values in `cross_cache` once computed.
class BartAttentionImpl : public torch::nn::Module {
 public:
  BartAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout);
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, bool is_causal,
                     const at::Tensor& key_value_states = {}, KeyValueCache* cache = nullptr,
                     int64_t layer = 0, std::pair<at::Tensor, at::Tensor>* cross_cache = nullptr);

  AdaptableLinear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, out_proj{nullptr};

 private:
  int64_t num_heads_, head_dim_;
  double dropout_;
};
TORCH_MODULE(BartAttention);

/// What every BART layer ends with: final_layer_norm(x + dropout(fc2(dropout(act(fc1 x))))).
class BartFeedForward {
 public:
  BartFeedForward() = default;  // empty until assigned one registered on its layer
  /// Registers fc1, fc2, final_layer_norm and the dropouts on `owner` (HF's names).
  BartFeedForward(torch::nn::Module& owner, const BartConfig& config, int64_t ffn_dim);
  at::Tensor forward(const at::Tensor& hidden);

  AdaptableLinear fc1{nullptr}, fc2{nullptr};
  torch::nn::LayerNorm final_layer_norm{nullptr};
  Dropout dropout{nullptr}, activation_dropout{nullptr};

 private:
  std::string activation_;
};

/// x -> self_attn_layer_norm(x + dropout(self_attn(x))) -> the feed-forward. A ZeRO-3 / FSDP unit
/// ("BartEncoderLayer").
class BartEncoderLayerImpl : public torch::nn::Module {
 public:
  explicit BartEncoderLayerImpl(const BartConfig& config);
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask);

  BartAttention self_attn{nullptr};
  torch::nn::LayerNorm self_attn_layer_norm{nullptr};
  BartFeedForward feed_forward;

 private:
  Dropout dropout_{nullptr};
  ForwardHookPoint hook_point_{*this};
};
TORCH_MODULE(BartEncoderLayer);

/// Self-attention (causal), cross-attention over the encoder's output, the feed-forward; each
/// residual then its layer norm. A ZeRO-3 / FSDP unit ("BartDecoderLayer").
class BartDecoderLayerImpl : public torch::nn::Module {
 public:
  explicit BartDecoderLayerImpl(const BartConfig& config);
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, bool is_causal,
                     const at::Tensor& encoder_hidden, const at::Tensor& encoder_mask,
                     KeyValueCache* cache = nullptr, int64_t index = 0,
                     std::pair<at::Tensor, at::Tensor>* cross_cache = nullptr);

  BartAttention self_attn{nullptr}, encoder_attn{nullptr};
  torch::nn::LayerNorm self_attn_layer_norm{nullptr}, encoder_attn_layer_norm{nullptr};
  BartFeedForward feed_forward;

 private:
  Dropout dropout_{nullptr};
  ForwardHookPoint hook_point_{*this};
};
TORCH_MODULE(BartDecoderLayer);

/// BartModel: `shared` (the token embedding; pad_token_id's row gets no gradient), the encoder
/// and the decoder (each with its embed_positions and layernorm_embedding).
class BartModelImpl : public torch::nn::Module {
 public:
  explicit BartModelImpl(const BartConfig& config);

  /// The encoder's last hidden state [B, S, d_model]; `attention_mask` [B, S] or undefined.
  at::Tensor encode(const at::Tensor& input_ids, const at::Tensor& attention_mask);
  /// The decoder's last hidden state [B, T, d_model] over `encoder_hidden`. `attention_mask`
  /// (the decoder's; [B, cache->length() + T] with a cache) may be undefined.
  at::Tensor decode(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                    const at::Tensor& encoder_hidden, const at::Tensor& encoder_mask,
                    KeyValueCache* cache = nullptr, CrossAttentionCache* cross_cache = nullptr);

  void set_gradient_checkpointing(bool enable) { gradient_checkpointing_ = enable; }
  std::optional<double> neftune_noise_alpha;

  torch::nn::Embedding shared{nullptr};
  // The stacks' own parameters, under HF's names (encoder.embed_positions.weight, ...).
  std::shared_ptr<torch::nn::Module> encoder, decoder;
  torch::nn::Embedding encoder_positions{nullptr}, decoder_positions{nullptr};
  torch::nn::LayerNorm encoder_layernorm{nullptr}, decoder_layernorm{nullptr};
  std::vector<BartEncoderLayer> encoder_layers;
  std::vector<BartDecoderLayer> decoder_layers;

 private:
  /// Token embeddings (scaled) plus the positions past..past+T-1, layer-normed, dropped out.
  at::Tensor embed(const at::Tensor& input_ids, int64_t past, torch::nn::Embedding& positions,
                   torch::nn::LayerNorm& layernorm);
  /// LayerDrop: whether a training step skips a layer (one torch.rand draw per layer, as HF).
  bool drop_layer(double probability);

  BartConfig config_;
  Dropout dropout_{nullptr};
  double embed_scale_;
  bool gradient_checkpointing_ = false;
};
TORCH_MODULE(BartModel);

/// HF's BART initialisation (PreTrainedModel._init_weights with init_std) of `module`'s
/// parameters and buffers, every one when `only` is null, else those named in *only: matrices and
/// embeddings normal(0, init_std) (the pad_token_id row of shared zero), biases and
/// final_logits_bias 0, layer norms 1.
void init_bart_weights(torch::nn::Module& module, const BartConfig& config,
                       const std::vector<std::string>* only = nullptr);

}  // namespace ctrainer
