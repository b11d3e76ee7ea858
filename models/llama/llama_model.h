#pragma once
/// \file Llama's decoder (transformers.LlamaModel): token embeddings (pad_token_id's row gets no
/// gradient), pre-RMSNorm layers of grouped-query causal self-attention with rotary position
/// embeddings and a gated MLP (SwiGLU), a final RMSNorm. Parameter names are HF's state-dict keys
/// (embed_tokens.weight, layers.0.self_attn.q_proj.weight, ..., norm.weight).
#include <optional>

#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <ctrainer/core/forward_hooks.h>
#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/kv_cache.h>
#include <ctrainer/models/llama/llama_config.h>

namespace ctrainer {

/// HF LlamaRMSNorm (T5's LayerNorm): x / sqrt(mean(x^2) + eps) in fp32, cast back, times weight.
class LlamaRMSNormImpl : public torch::nn::Module {
 public:
  LlamaRMSNormImpl(int64_t hidden_size, double eps);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(LlamaRMSNorm);

/// The inverse frequencies [head_dim / 2] of `config`'s RoPE (HF's rope init functions: default,
/// linear, llama3), in fp32.
at::Tensor rope_inverse_frequencies(const LlamaConfig& config);

/// cos and sin for each position (HF LlamaRotaryEmbedding, fp32, cast to dtype): [T, head_dim]
/// for positions 0..T-1, or [B, 1, T, head_dim] for given position_ids.
struct RotaryTables {
  at::Tensor cos, sin;
};

class LlamaAttentionImpl : public torch::nn::Module {
 public:
  LlamaAttentionImpl(const LlamaConfig& config, int64_t layer_index);
  /// hidden [B, T, H]; mask boolean [B, 1, T, S] or undefined (SDPA's is_causal). With a `cache`,
  /// these T tokens' keys and values (after RoPE) are appended to this layer's, and the queries
  /// attend all S positions.
  at::Tensor forward(const at::Tensor& hidden, const RotaryTables& rotary, const at::Tensor& mask,
                     KeyValueCache* cache = nullptr);

  AdaptableLinear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  int64_t num_heads_, num_kv_heads_, head_dim_, layer_index_;
  double dropout_;
};
TORCH_MODULE(LlamaAttention);

class LlamaMLPImpl : public torch::nn::Module {
 public:
  explicit LlamaMLPImpl(const LlamaConfig& config);
  /// down_proj(act(gate_proj(x)) * up_proj(x)).
  at::Tensor forward(const at::Tensor& x);

  AdaptableLinear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};

 private:
  std::string activation_;
};
TORCH_MODULE(LlamaMLP);

/// x + self_attn(input_layernorm(x)), then + mlp(post_attention_layernorm(.)). A ZeRO-3 / FSDP
/// unit ("LlamaDecoderLayer", HF's _no_split_modules).
class LlamaDecoderLayerImpl : public torch::nn::Module {
 public:
  LlamaDecoderLayerImpl(const LlamaConfig& config, int64_t layer_index);
  at::Tensor forward(const at::Tensor& hidden, const RotaryTables& rotary, const at::Tensor& mask,
                     KeyValueCache* cache = nullptr);

  LlamaAttention self_attn{nullptr};
  LlamaMLP mlp{nullptr};
  LlamaRMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};

 private:
  ForwardHookPoint hook_point_{*this};
};
TORCH_MODULE(LlamaDecoderLayer);

class LlamaModelImpl : public torch::nn::Module {
 public:
  /// libtorch's default initialisation: the heads apply HF's (init_llama_weights).
  explicit LlamaModelImpl(const LlamaConfig& config);

  /// The last hidden state [B, T, hidden_size] of `input_ids` [B, T]; `attention_mask` [B, T]
  /// (1 = token) may be undefined. `position_ids` [B, T] default to 0..T-1; without an
  /// attention_mask, rows they pack with several sequences attend within each sequence only
  /// (DataCollatorWithFlattening). With a `cache` (generation), the tokens follow the positions
  /// it holds: `attention_mask` covers those too ([B, cache->length() + T]), position_ids default
  /// to the positions after them, and the new keys and values are appended to it.
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                     const at::Tensor& position_ids = {}, KeyValueCache* cache = nullptr);

  void set_gradient_checkpointing(bool enable) { gradient_checkpointing_ = enable; }

  /// NEFTune noise on embed_tokens' output while training (unset: none).
  std::optional<double> neftune_noise_alpha;

  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  std::vector<LlamaDecoderLayer> decoder_layers;  // the elements of layers, typed
  LlamaRMSNorm norm{nullptr};

 private:
  // Not a buffer: transformers does not save it (persistent=False), and neither do we.
  at::Tensor inverse_frequencies_;
  bool gradient_checkpointing_ = false;
};
TORCH_MODULE(LlamaModel);

/// HF's initialisation (PreTrainedModel._init_weights) of `module`'s parameters, every one when
/// `only` is null, else those named in *only: matrices and embeddings normal(0,
/// initializer_range) (the pad_token_id row of embed_tokens zero), biases 0, RMSNorm weights 1.
void init_llama_weights(torch::nn::Module& module, const LlamaConfig& config,
                        const std::vector<std::string>* only = nullptr);

}  // namespace ctrainer
