#pragma once
/// \file GPT-2's transformer (transformers.GPT2Model): token and learned position embeddings,
/// pre-LayerNorm blocks of causal self-attention and an MLP, a final LayerNorm. Parameter names
/// are HF's state-dict keys (wte.weight, h.0.attn.c_attn.weight, ...), and the projections are
/// HF's Conv1D (weights stored [in, out]), so checkpoints load without renaming or transposing.
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
#include <ctrainer/models/dropout.h>
#include <ctrainer/models/gpt2/gpt2_config.h>
#include <ctrainer/models/kv_cache.h>

namespace ctrainer {

/// HF's Conv1D: y = x W + b with W stored [in_features, out_features] (the transpose of a
/// Linear's), as GPT-2 checkpoints hold it. Adapters (LoRA) attach to it as PEFT's do, with
/// fan_in_fan_out.
class Conv1DImpl : public torch::nn::Module, public AdaptableProjection {
 public:
  Conv1DImpl(int64_t out_features, int64_t in_features);
  at::Tensor forward(const at::Tensor& x);

  int64_t in_features() const override { return in_features_; }
  int64_t out_features() const override { return out_features_; }
  at::Tensor& projection_weight() override { return weight; }
  bool fan_in_fan_out() const override { return true; }

  at::Tensor weight, bias;

 private:
  int64_t in_features_, out_features_;
};
TORCH_MODULE(Conv1D);

/// Causal self-attention. `mask` is a boolean [B, 1, T, S] (true = attend) or undefined, in which
/// case the causal mask is SDPA's is_causal (no mask is materialised). With a `cache`, the keys
/// and values of these T tokens are appended to this layer's and the queries attend all S of
/// them (a cache holding positions and no mask: the one new token attends every key).
class GPT2AttentionImpl : public torch::nn::Module {
 public:
  GPT2AttentionImpl(const GPT2Config& config, int64_t layer_index);
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask,
                     KeyValueCache* cache = nullptr);

  Conv1D c_attn{nullptr}, c_proj{nullptr};
  Dropout resid_dropout{nullptr};

 private:
  int64_t num_heads_;
  int64_t layer_index_;
  double attn_pdrop_;
  double scaling_;
};
TORCH_MODULE(GPT2Attention);

class GPT2MLPImpl : public torch::nn::Module {
 public:
  explicit GPT2MLPImpl(const GPT2Config& config);
  at::Tensor forward(const at::Tensor& hidden);

  Conv1D c_fc{nullptr}, c_proj{nullptr};
  Dropout dropout{nullptr};

 private:
  std::string activation_;
};
TORCH_MODULE(GPT2MLP);

/// x + attn(ln_1(x)), then + mlp(ln_2(.)). A ZeRO-3 / FSDP unit ("GPT2Block", HF's
/// _no_split_modules).
class GPT2BlockImpl : public torch::nn::Module {
 public:
  GPT2BlockImpl(const GPT2Config& config, int64_t layer_index);
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask,
                     KeyValueCache* cache = nullptr);

  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  GPT2Attention attn{nullptr};
  GPT2MLP mlp{nullptr};

 private:
  ForwardHookPoint hook_point_{*this};
};
TORCH_MODULE(GPT2Block);

class GPT2ModelImpl : public torch::nn::Module {
 public:
  /// libtorch's default initialisation: the heads that own it apply HF's (init_gpt2_weights).
  explicit GPT2ModelImpl(const GPT2Config& config);

  /// The last hidden state [B, T, n_embd] of `input_ids` [B, T]; `attention_mask` [B, T]
  /// (1 = token) may be undefined, and so may `token_type_ids` (HF embeds them with wte).
  /// `position_ids` [B, T] default to 0..T-1 (no cache); without an attention_mask, rows they
  /// pack with several sequences attend within each sequence only (DataCollatorWithFlattening).
  /// With a `cache` (generation), the tokens follow the positions it holds: `attention_mask`
  /// then covers those too ([B, cache->length() + T]), position_ids default to the positions
  /// after them, and the new keys and values are appended to it.
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                     const at::Tensor& token_type_ids = {}, const at::Tensor& position_ids = {},
                     KeyValueCache* cache = nullptr);

  /// NEFTune noise on wte's output while training (unset: none).
  std::optional<double> neftune_noise_alpha;

  /// Recompute each block in backward instead of keeping its activations (training only).
  void set_gradient_checkpointing(bool enable) { gradient_checkpointing_ = enable; }

  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  Dropout drop{nullptr};
  torch::nn::ModuleList h{nullptr};
  std::vector<GPT2Block> blocks;  // the elements of h, typed
  torch::nn::LayerNorm ln_f{nullptr};

 private:
  bool gradient_checkpointing_ = false;
};
TORCH_MODULE(GPT2Model);

/// HF's GPT-2 initialisation (GPT2PreTrainedModel._init_weights) of `module`'s parameters: of
/// every one when `only` is null, else of those named in *only (state-dict names, e.g. the keys
/// a checkpoint lacked). Weights of matrices and embeddings: normal(0, initializer_range), c_proj
/// weights normal(0, initializer_range / sqrt(2 n_layer)); biases 0; LayerNorm weights 1.
void init_gpt2_weights(torch::nn::Module& module, const GPT2Config& config,
                       const std::vector<std::string>* only = nullptr);

}  // namespace ctrainer
