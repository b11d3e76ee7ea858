#include <ctrainer/models/gpt2/gpt2_model.h>

#include <cmath>
#include <optional>
#include <set>
#include <tuple>

#include <torch/nn/init.h>

#include <ctrainer/models/activations.h>
#include <ctrainer/models/attention.h>
#include <ctrainer/models/attention_mask.h>
#include <ctrainer/models/gradient_checkpointing.h>
#include <ctrainer/models/linear_kernel.h>
#include <ctrainer/models/neftune.h>

namespace ctrainer {

Conv1DImpl::Conv1DImpl(int64_t out_features, int64_t in_features)
    : in_features_(in_features), out_features_(out_features) {
  weight = register_parameter("weight", at::empty({in_features, out_features}));
  bias = register_parameter("bias", at::zeros({out_features}));
  torch::nn::init::normal_(weight, 0.0, 0.02);  // HF Conv1D's own default
}

at::Tensor Conv1DImpl::forward(const at::Tensor& x) {
  // x W + b with W stored [in, out]: linear() takes the transposed view as its [out, in] weight.
  return adapted(x, ctrainer::linear(x, weight.t(), bias));
}

GPT2AttentionImpl::GPT2AttentionImpl(const GPT2Config& config, int64_t layer_index)
    : num_heads_(config.n_head), layer_index_(layer_index), attn_pdrop_(config.attn_pdrop) {
  c_attn = register_module("c_attn", Conv1D(3 * config.n_embd, config.n_embd));
  c_proj = register_module("c_proj", Conv1D(config.n_embd, config.n_embd));
  resid_dropout = register_module("resid_dropout", Dropout(config.resid_pdrop));
  // HF: head_dim^-0.5 when scale_attn_weights, further / (layer_idx + 1) when asked.
  scaling_ =
      config.scale_attn_weights ? 1.0 / std::sqrt(static_cast<double>(config.head_dim())) : 1.0;
  if (config.scale_attn_by_inverse_layer_idx) scaling_ /= static_cast<double>(layer_index + 1);
}

at::Tensor GPT2AttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                      KeyValueCache* cache) {
  const int64_t batch = hidden.size(0), length = hidden.size(1), width = hidden.size(2);
  const std::vector<at::Tensor> qkv = c_attn->forward(hidden).split(width, 2);
  auto heads = [&](const at::Tensor& x) {
    return x.view({batch, length, num_heads_, width / num_heads_}).transpose(1, 2);
  };
  at::Tensor keys = heads(qkv[1]), values = heads(qkv[2]);
  const bool nothing_cached = cache == nullptr || cache->length(layer_index_) == 0;
  if (cache) std::tie(keys, values) = cache->append(layer_index_, keys, values);
  const at::Tensor context =
      attention(heads(qkv[0]), keys, values, mask, attn_pdrop_, is_training(),
                /*is_causal=*/!mask.defined() && nothing_cached, scaling_);
  return resid_dropout->forward(
      c_proj->forward(context.transpose(1, 2).reshape({batch, length, width})));
}

GPT2MLPImpl::GPT2MLPImpl(const GPT2Config& config) : activation_(config.activation_function) {
  c_fc = register_module("c_fc", Conv1D(config.inner_size(), config.n_embd));
  c_proj = register_module("c_proj", Conv1D(config.n_embd, config.inner_size()));
  dropout = register_module("dropout", Dropout(config.resid_pdrop));
}

at::Tensor GPT2MLPImpl::forward(const at::Tensor& hidden) {
  return dropout->forward(c_proj->forward(apply_activation(activation_, c_fc->forward(hidden))));
}

GPT2BlockImpl::GPT2BlockImpl(const GPT2Config& config, int64_t layer_index) {
  const auto norm = torch::nn::LayerNormOptions({config.n_embd}).eps(config.layer_norm_epsilon);
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(norm));
  attn = register_module("attn", GPT2Attention(config, layer_index));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(norm));
  mlp = register_module("mlp", GPT2MLP(config));
}

at::Tensor GPT2BlockImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                  KeyValueCache* cache) {
  auto hooks = hook_point_.enter();
  at::Tensor out = hidden + attn->forward(ln_1->forward(hidden), mask, cache);
  out = out + mlp->forward(ln_2->forward(out));
  return hooks.finish(out);
}

GPT2ModelImpl::GPT2ModelImpl(const GPT2Config& config) {
  wte = register_module("wte", torch::nn::Embedding(config.vocab_size, config.n_embd));
  wpe = register_module("wpe", torch::nn::Embedding(config.n_positions, config.n_embd));
  drop = register_module("drop", Dropout(config.embd_pdrop));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.n_layer; ++i) {
    blocks.push_back(GPT2Block(config, i));
    h->push_back(blocks.back());
  }
  ln_f = register_module(
      "ln_f", torch::nn::LayerNorm(
                  torch::nn::LayerNormOptions({config.n_embd}).eps(config.layer_norm_epsilon)));
}

at::Tensor GPT2ModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                  const at::Tensor& token_type_ids, const at::Tensor& position_ids,
                                  KeyValueCache* cache) {
  const int64_t length = input_ids.size(1);
  const int64_t past = cache ? cache->length() : 0;
  const int64_t n_positions = wpe->weight.size(0);
  // Packed rows (given position_ids) may be longer than n_positions; their positions may not.
  TORCH_CHECK(position_ids.defined() || past + length <= n_positions, "GPT-2: ", past + length,
              " tokens are more than the model's n_positions (", n_positions,
              "); truncate the input (--max_seq_length / --block_size) or generate fewer tokens");
  const at::Tensor positions =
      position_ids.defined()
          ? position_ids
          : at::arange(past, past + length, input_ids.options().dtype(at::kLong)).unsqueeze(0);
  TORCH_CHECK(!cache || !position_ids.defined() || position_ids.max().item<int64_t>() < n_positions,
              "GPT-2: position ", position_ids.max().item<int64_t>(),
              " is past the model's n_positions (", n_positions, "); generate fewer tokens");
  at::Tensor hidden =
      with_neftune_noise(wte->forward(input_ids), neftune_noise_alpha, is_training()) +
      wpe->forward(positions);
  if (token_type_ids.defined()) hidden = hidden + wte->forward(token_type_ids);
  hidden = drop->forward(hidden);
  const at::Tensor mask = cache ? cached_causal_mask(attention_mask, past, length)
                                : decoder_attention_mask(attention_mask, position_ids, length);
  for (GPT2Block& block : blocks) {
    if (gradient_checkpointing_ && is_training() && at::GradMode::is_enabled()) {
      std::vector<at::Tensor> parameters;
      for (const at::Tensor& p : block->parameters())
        if (p.requires_grad()) parameters.push_back(p);
      // By value: the recompute runs in backward, after this frame is gone.
      hidden =
          checkpoint([block, mask](const at::Tensor& x) mutable { return block->forward(x, mask); },
                     hidden, parameters);
    } else {
      hidden = block->forward(hidden, mask, cache);
    }
  }
  return ln_f->forward(hidden);
}

void init_gpt2_weights(torch::nn::Module& module, const GPT2Config& config,
                       const std::vector<std::string>* only) {
  const std::set<std::string> wanted =
      only ? std::set<std::string>(only->begin(), only->end()) : std::set<std::string>();
  torch::NoGradGuard no_grad;
  const double projection_std =
      config.initializer_range / std::sqrt(2.0 * static_cast<double>(config.n_layer));
  for (auto& item : module.named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    if (only && wanted.count(name) == 0) continue;
    at::Tensor& p = item.value();
    const bool is_bias = name.ends_with(".bias");
    const bool is_layer_norm = name.find("ln_") != std::string::npos;
    if (is_bias) {
      p.zero_();
    } else if (is_layer_norm) {
      p.fill_(1.0);
    } else if (name.ends_with("c_proj.weight")) {
      torch::nn::init::normal_(p, 0.0, projection_std);
    } else {
      torch::nn::init::normal_(p, 0.0, config.initializer_range);
    }
  }
}

}  // namespace ctrainer
