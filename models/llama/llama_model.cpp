#include <ctrainer/models/llama/llama_model.h>

#include <cmath>
#include <numbers>
#include <optional>
#include <set>
#include <tuple>

#include <torch/nn/init.h>

#include <ctrainer/models/activations.h>
#include <ctrainer/models/attention.h>
#include <ctrainer/models/attention_mask.h>
#include <ctrainer/models/gradient_checkpointing.h>
#include <ctrainer/models/neftune.h>

namespace ctrainer {
namespace {

AdaptableLinear linear(int64_t in, int64_t out, bool bias) {
  return AdaptableLinear(torch::nn::LinearOptions(in, out).bias(bias));
}

// HF rotate_half: [-x2, x1] of the halves x1, x2.
at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// [B, kv_heads, T, D] -> [B, kv_heads * groups, T, D], each kv head repeated `groups` times in
// place (HF repeat_kv).
at::Tensor repeat_kv(const at::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const auto s = x.sizes();
  return x.unsqueeze(2)
      .expand({s[0], s[1], groups, s[2], s[3]})
      .reshape({s[0], s[1] * groups, s[2], s[3]});
}

}  // namespace

LlamaRMSNormImpl::LlamaRMSNormImpl(int64_t hidden_size, double eps) : eps_(eps) {
  weight = register_parameter("weight", at::ones({hidden_size}));
}

at::Tensor LlamaRMSNormImpl::forward(const at::Tensor& x) {
  const at::Tensor x32 = x.to(at::kFloat);
  const at::Tensor normed = x32 * at::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return weight * normed.to(x.scalar_type());
}

at::Tensor rope_inverse_frequencies(const LlamaConfig& config) {
  const RopeParameters& rope = config.rope;
  const int64_t dim = config.head_dim;
  // HF: 1 / base^(arange(0, dim, 2) / dim), in fp32.
  at::Tensor inv_freq =
      1.0 / at::pow(rope.rope_theta, at::arange(0, dim, 2, at::kLong).to(at::kFloat) / dim);
  if (rope.rope_type == "linear") return inv_freq / rope.factor;
  if (rope.rope_type == "llama3") {
    const double old_context = static_cast<double>(rope.original_max_position_embeddings);
    const double low_freq_wavelen = old_context / rope.low_freq_factor;
    const double high_freq_wavelen = old_context / rope.high_freq_factor;
    const at::Tensor wavelen = 2 * std::numbers::pi / inv_freq;
    at::Tensor scaled = at::where(wavelen > low_freq_wavelen, inv_freq / rope.factor, inv_freq);
    const at::Tensor smooth = (old_context / wavelen - rope.low_freq_factor) /
                              (rope.high_freq_factor - rope.low_freq_factor);
    const at::Tensor smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled;
    const at::Tensor medium = (wavelen < high_freq_wavelen)
                                  .logical_not()
                                  .logical_and((wavelen > low_freq_wavelen).logical_not());
    return at::where(medium, smoothed, scaled);
  }
  return inv_freq;
}

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaConfig& c, int64_t layer_index)
    : num_heads_(c.num_attention_heads),
      num_kv_heads_(c.num_key_value_heads),
      head_dim_(c.head_dim),
      layer_index_(layer_index),
      dropout_(c.attention_dropout) {
  q_proj =
      register_module("q_proj", linear(c.hidden_size, num_heads_ * head_dim_, c.attention_bias));
  k_proj =
      register_module("k_proj", linear(c.hidden_size, num_kv_heads_ * head_dim_, c.attention_bias));
  v_proj =
      register_module("v_proj", linear(c.hidden_size, num_kv_heads_ * head_dim_, c.attention_bias));
  o_proj =
      register_module("o_proj", linear(num_heads_ * head_dim_, c.hidden_size, c.attention_bias));
}

at::Tensor LlamaAttentionImpl::forward(const at::Tensor& hidden, const RotaryTables& rotary,
                                       const at::Tensor& mask, KeyValueCache* cache) {
  const int64_t batch = hidden.size(0), length = hidden.size(1);
  auto heads = [&](const at::Tensor& x) {
    return x.view({batch, length, -1, head_dim_}).transpose(1, 2);
  };
  at::Tensor q = heads(q_proj->forward(hidden));
  at::Tensor k = heads(k_proj->forward(hidden));
  at::Tensor v = heads(v_proj->forward(hidden));
  // HF apply_rotary_pos_emb: x * cos + rotate_half(x) * sin, cos/sin [T, D] broadcast.
  q = q * rotary.cos + rotate_half(q) * rotary.sin;
  k = k * rotary.cos + rotate_half(k) * rotary.sin;
  const bool nothing_cached = cache == nullptr || cache->length(layer_index_) == 0;
  if (cache) std::tie(k, v) = cache->append(layer_index_, k, v);  // before repeat_kv, as HF
  const int64_t groups = num_heads_ / num_kv_heads_;
  const at::Tensor context =
      attention(q, repeat_kv(k, groups), repeat_kv(v, groups), mask, dropout_, is_training(),
                /*is_causal=*/!mask.defined() && nothing_cached,
                1.0 / std::sqrt(static_cast<double>(head_dim_)));
  return o_proj->forward(context.transpose(1, 2).reshape({batch, length, num_heads_ * head_dim_}));
}

LlamaMLPImpl::LlamaMLPImpl(const LlamaConfig& c) : activation_(c.hidden_act) {
  gate_proj = register_module("gate_proj", linear(c.hidden_size, c.intermediate_size, c.mlp_bias));
  up_proj = register_module("up_proj", linear(c.hidden_size, c.intermediate_size, c.mlp_bias));
  down_proj = register_module("down_proj", linear(c.intermediate_size, c.hidden_size, c.mlp_bias));
}

at::Tensor LlamaMLPImpl::forward(const at::Tensor& x) {
  return down_proj->forward(apply_activation(activation_, gate_proj->forward(x)) *
                            up_proj->forward(x));
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaConfig& c, int64_t layer_index) {
  self_attn = register_module("self_attn", LlamaAttention(c, layer_index));
  mlp = register_module("mlp", LlamaMLP(c));
  input_layernorm = register_module("input_layernorm", LlamaRMSNorm(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", LlamaRMSNorm(c.hidden_size, c.rms_norm_eps));
}

at::Tensor LlamaDecoderLayerImpl::forward(const at::Tensor& hidden, const RotaryTables& rotary,
                                          const at::Tensor& mask, KeyValueCache* cache) {
  auto hooks = hook_point_.enter();
  at::Tensor out =
      hidden + self_attn->forward(input_layernorm->forward(hidden), rotary, mask, cache);
  out = out + mlp->forward(post_attention_layernorm->forward(out));
  return hooks.finish(out);
}

LlamaModelImpl::LlamaModelImpl(const LlamaConfig& c) {
  auto embedding = torch::nn::EmbeddingOptions(c.vocab_size, c.hidden_size);
  if (c.pad_token_id) embedding.padding_idx(*c.pad_token_id);
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(embedding));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    decoder_layers.push_back(LlamaDecoderLayer(c, i));
    layers->push_back(decoder_layers.back());
  }
  norm = register_module("norm", LlamaRMSNorm(c.hidden_size, c.rms_norm_eps));
  inverse_frequencies_ = rope_inverse_frequencies(c);
}

at::Tensor LlamaModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                   const at::Tensor& position_ids, KeyValueCache* cache) {
  const int64_t length = input_ids.size(1);
  const int64_t past = cache ? cache->length() : 0;
  at::Tensor hidden =
      with_neftune_noise(embed_tokens->forward(input_ids), neftune_noise_alpha, is_training());
  // HF LlamaRotaryEmbedding: freqs = position * inv_freq in fp32, emb = [freqs, freqs].
  // Given positions make per-row tables [B, 1, T, D] that broadcast over the heads.
  const at::Tensor positions =
      position_ids.defined() ? position_ids.to(at::kFloat).unsqueeze(1)
                             : at::arange(past, past + length, hidden.options().dtype(at::kFloat));
  const at::Tensor freqs = positions.unsqueeze(-1) * inverse_frequencies_.to(hidden.device());
  const at::Tensor emb = at::cat({freqs, freqs}, -1);
  const RotaryTables rotary{emb.cos().to(hidden.scalar_type()), emb.sin().to(hidden.scalar_type())};
  const at::Tensor mask = cache ? cached_causal_mask(attention_mask, past, length)
                                : decoder_attention_mask(attention_mask, position_ids, length);
  for (LlamaDecoderLayer& layer : decoder_layers) {
    if (gradient_checkpointing_ && is_training() && at::GradMode::is_enabled()) {
      std::vector<at::Tensor> parameters;
      for (const at::Tensor& p : layer->parameters())
        if (p.requires_grad()) parameters.push_back(p);
      // By value: the recompute runs in backward, after this frame is gone.
      hidden =
          checkpoint([layer, rotary, mask](
                         const at::Tensor& x) mutable { return layer->forward(x, rotary, mask); },
                     hidden, parameters);
    } else {
      hidden = layer->forward(hidden, rotary, mask, cache);
    }
  }
  return norm->forward(hidden);
}

void init_llama_weights(torch::nn::Module& module, const LlamaConfig& config,
                        const std::vector<std::string>* only) {
  const std::set<std::string> wanted =
      only ? std::set<std::string>(only->begin(), only->end()) : std::set<std::string>();
  torch::NoGradGuard no_grad;
  for (auto& item : module.named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    if (only && wanted.count(name) == 0) continue;
    at::Tensor& p = item.value();
    if (name.ends_with(".bias")) {
      p.zero_();
    } else if (name.ends_with("norm.weight")) {  // input_layernorm, post_attention_layernorm, norm
      p.fill_(1.0);
    } else {
      torch::nn::init::normal_(p, 0.0, config.initializer_range);
      if (name.ends_with("embed_tokens.weight") && config.pad_token_id)
        p[*config.pad_token_id].zero_();
    }
  }
}

}  // namespace ctrainer
