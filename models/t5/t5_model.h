#pragma once
/// \file T5's encoder and decoder stacks (transformers' T5Stack and its layers): pre-RMS-norm
/// blocks of self-attention with relative position buckets (learned by each stack's first
/// block, shared by the rest), cross-attention in the decoder, and a ReLU or gated-GELU
/// feed-forward; no biases and no attention scaling. Parameter names are HF's state-dict keys
/// (block.0.layer.0.SelfAttention.q.weight, ..., final_layer_norm.weight).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/pimpl.h>

#include <ctrainer/core/forward_hooks.h>
#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/dropout.h>
#include <ctrainer/models/kv_cache.h>
#include <ctrainer/models/t5/t5_config.h>

namespace ctrainer {

/// T5LayerNorm: x / sqrt(mean(x^2) + eps) (variance in fp32, no mean subtracted, no bias),
/// times weight.
class T5LayerNormImpl : public torch::nn::Module {
 public:
  T5LayerNormImpl(int64_t hidden_size, double eps);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(T5LayerNorm);

/// The bucket [0, num_buckets) of each relative position (key - query), as Mesh TensorFlow and
/// transformers' T5Attention._relative_position_bucket compute it: exact buckets for small
/// distances, logarithmic ones up to max_distance; `bidirectional` (the encoder) gives half the
/// buckets to positive distances.
at::Tensor relative_position_bucket(const at::Tensor& relative_position, bool bidirectional,
                                    int64_t num_buckets, int64_t max_distance);

/// T5Attention: q, k, v, o without bias, scale 1. The additive `bias` [1 or B, H, Tq, Tk]
/// holds the relative position bias and the mask (the lowest float where a key is masked).
/// Self-attention takes keys from `hidden`; cross-attention from `key_value_states`.
class T5AttentionImpl : public torch::nn::Module {
 public:
  T5AttentionImpl(const T5Config& config, bool has_relative_attention_bias, bool bidirectional);
  /// With `cache` and `layer` (decoder self-attention), these tokens' keys and values are
  /// appended to the cache's layer. `cross_cache` (decoder cross-attention during generation)
  /// holds the keys and values of `key_value_states` once computed.
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& bias,
                     const at::Tensor& key_value_states = {}, KeyValueCache* cache = nullptr,
                     int64_t layer = 0, std::pair<at::Tensor, at::Tensor>* cross_cache = nullptr);
  /// The relative position bias [1, H, query_length, key_length] of queries at positions
  /// past..past+query_length-1 (needs has_relative_attention_bias).
  at::Tensor compute_bias(int64_t query_length, int64_t key_length, int64_t past,
                          const at::Device& device);

  AdaptableLinear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  torch::nn::Embedding relative_attention_bias{nullptr};

 private:
  int64_t num_heads_, d_kv_, num_buckets_, max_distance_;
  bool bidirectional_;
  double dropout_;
};
TORCH_MODULE(T5Attention);

/// x + SelfAttention(layer_norm(x)) (T5LayerSelfAttention) or x + EncDecAttention(layer_norm(x),
/// encoder states) (T5LayerCrossAttention), with dropout on the attention's output.
class T5LayerAttentionImpl : public torch::nn::Module {
 public:
  T5LayerAttentionImpl(const T5Config& config, bool cross, bool has_relative_attention_bias,
                       bool bidirectional);
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& bias,
                     const at::Tensor& key_value_states = {}, KeyValueCache* cache = nullptr,
                     int64_t layer = 0, std::pair<at::Tensor, at::Tensor>* cross_cache = nullptr);

  T5Attention attention{nullptr};  // registered as SelfAttention or EncDecAttention
  T5LayerNorm layer_norm{nullptr};
  Dropout dropout{nullptr};
};
TORCH_MODULE(T5LayerAttention);

/// x + DenseReluDense(layer_norm(x)): wo(dropout(act(wi x))), or gated wo(dropout(act(wi_0 x) *
/// wi_1 x)).
class T5LayerFFImpl : public torch::nn::Module {
 public:
  explicit T5LayerFFImpl(const T5Config& config);
  at::Tensor forward(const at::Tensor& hidden);

  AdaptableLinear wi{nullptr}, wi_0{nullptr}, wi_1{nullptr}, wo{nullptr};
  T5LayerNorm layer_norm{nullptr};
  Dropout inner_dropout{nullptr}, dropout{nullptr};

 private:
  std::string activation_;
};
TORCH_MODULE(T5LayerFF);

/// One block: layer.0 self-attention, (decoder) layer.1 cross-attention, then the feed-forward.
/// A ZeRO-3 / FSDP unit ("T5Block", HF's _no_split_modules).
class T5BlockImpl : public torch::nn::Module {
 public:
  T5BlockImpl(const T5Config& config, bool is_decoder, bool has_relative_attention_bias);
  /// `self_bias` undefined: `make_self_bias` makes it here, inside the block's forward (block 0,
  /// whose parameters hold the relative positions: ZeRO-3 and FSDP have gathered them only
  /// there), and last_self_bias keeps it for the blocks after.
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& self_bias,
                     const at::Tensor& encoder_hidden = {}, const at::Tensor& cross_bias = {},
                     KeyValueCache* cache = nullptr, int64_t index = 0,
                     std::pair<at::Tensor, at::Tensor>* cross_cache = nullptr,
                     const std::function<at::Tensor()>* make_self_bias = nullptr);

  at::Tensor last_self_bias;

  torch::nn::ModuleList layer{nullptr};
  T5LayerAttention self_attention{nullptr}, cross_attention{nullptr};
  T5LayerFF feed_forward{nullptr};

 private:
  ForwardHookPoint hook_point_{*this};
};
TORCH_MODULE(T5Block);

/// T5Stack: the encoder (bidirectional) or the decoder (causal, with cross-attention). The token
/// embedding is the model's `shared`, not a parameter of the stack.
class T5StackImpl : public torch::nn::Module {
 public:
  T5StackImpl(const T5Config& config, bool is_decoder, torch::nn::Embedding shared);

  /// The last hidden state [B, T, d_model] (after final_layer_norm and dropout). `attention_mask`
  /// [B, T] (1 = token; with a cache [B, cache->length() + T]) may be undefined; the decoder
  /// attends `encoder_hidden` [B, S, d_model] where `encoder_attention_mask` [B, S] allows.
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                     const at::Tensor& encoder_hidden = {},
                     const at::Tensor& encoder_attention_mask = {}, KeyValueCache* cache = nullptr,
                     CrossAttentionCache* cross_cache = nullptr);

  void set_gradient_checkpointing(bool enable) { gradient_checkpointing_ = enable; }
  std::optional<double> neftune_noise_alpha;

  torch::nn::ModuleList block{nullptr};
  std::vector<T5Block> blocks;  // the elements of block, typed
  T5LayerNorm final_layer_norm{nullptr};
  Dropout dropout{nullptr};

 private:
  torch::nn::Embedding shared_;  // the model's, not registered here
  bool is_decoder_;
  int64_t num_heads_;
  bool gradient_checkpointing_ = false;
};
TORCH_MODULE(T5Stack);

/// HF's T5 initialisation (T5PreTrainedModel._init_weights, initializer_factor f) of `module`'s
/// parameters, every one when `only` is null, else those named in *only: shared and lm_head
/// normal(0, f), q normal(0, f (d_model d_kv)^-0.5), k and v normal(0, f d_model^-0.5), o
/// normal(0, f (heads d_kv)^-0.5), relative_attention_bias normal(0, f d_model^-0.5), wi / wi_0 /
/// wi_1 normal(0, f d_model^-0.5), wo normal(0, f d_ff^-0.5), layer norms f.
void init_t5_weights(torch::nn::Module& module, const T5Config& config,
                     const std::vector<std::string>* only = nullptr);

}  // namespace ctrainer
