#include <ctrainer/models/t5/t5_model.h>

#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include <torch/nn/init.h>

#include <ctrainer/models/activations.h>
#include <ctrainer/models/attention.h>
#include <ctrainer/models/attention_mask.h>
#include <ctrainer/models/gradient_checkpointing.h>
#include <ctrainer/models/neftune.h>

namespace ctrainer {
namespace {

AdaptableLinear t5_linear(int64_t in, int64_t out) {
  return AdaptableLinear(torch::nn::LinearOptions(in, out).bias(false));
}

/// transformers' SDPA mask for T5 (create_position_bias_mask): the bias where `mask` (boolean,
/// true = attend) allows, the lowest float elsewhere; the bias alone without a mask.
at::Tensor masked_bias(const at::Tensor& bias, const at::Tensor& mask) {
  if (!mask.defined()) return bias;
  return at::where(mask, bias, std::numeric_limits<float>::lowest());
}

}  // namespace

T5LayerNormImpl::T5LayerNormImpl(int64_t hidden_size, double eps) : eps_(eps) {
  weight = register_parameter("weight", at::ones({hidden_size}));
}

at::Tensor T5LayerNormImpl::forward(const at::Tensor& x) {
  const at::Tensor variance = x.to(at::kFloat).pow(2).mean(-1, /*keepdim=*/true);
  at::Tensor normed = x * at::rsqrt(variance + eps_);
  if (weight.scalar_type() == at::kHalf || weight.scalar_type() == at::kBFloat16)
    normed = normed.to(weight.scalar_type());
  return weight * normed;
}

at::Tensor relative_position_bucket(const at::Tensor& relative_position, bool bidirectional,
                                    int64_t num_buckets, int64_t max_distance) {
  at::Tensor buckets = at::zeros_like(relative_position);
  at::Tensor distance = relative_position;
  if (bidirectional) {
    num_buckets /= 2;
    buckets = buckets + (relative_position > 0).to(at::kLong) * num_buckets;
    distance = relative_position.abs();
  } else {
    distance = -at::minimum(relative_position, at::zeros_like(relative_position));
  }
  const int64_t max_exact = num_buckets / 2;
  const at::Tensor is_small = distance < max_exact;
  at::Tensor if_large = max_exact + (at::log(distance.to(at::kFloat) / max_exact) /
                                     std::log(static_cast<double>(max_distance) / max_exact) *
                                     (num_buckets - max_exact))
                                        .to(at::kLong);
  if_large = at::minimum(if_large, at::full_like(if_large, num_buckets - 1));
  return buckets + at::where(is_small, distance, if_large);
}

T5AttentionImpl::T5AttentionImpl(const T5Config& c, bool has_relative_attention_bias,
                                 bool bidirectional)
    : num_heads_(c.num_heads),
      d_kv_(c.d_kv),
      num_buckets_(c.relative_attention_num_buckets),
      max_distance_(c.relative_attention_max_distance),
      bidirectional_(bidirectional),
      dropout_(c.dropout_rate) {
  const int64_t inner = c.num_heads * c.d_kv;
  q = register_module("q", t5_linear(c.d_model, inner));
  k = register_module("k", t5_linear(c.d_model, inner));
  v = register_module("v", t5_linear(c.d_model, inner));
  o = register_module("o", t5_linear(inner, c.d_model));
  if (has_relative_attention_bias)
    relative_attention_bias =
        register_module("relative_attention_bias",
                        torch::nn::Embedding(c.relative_attention_num_buckets, c.num_heads));
}

at::Tensor T5AttentionImpl::compute_bias(int64_t query_length, int64_t key_length, int64_t past,
                                         const at::Device& device) {
  const auto long_options = at::TensorOptions().dtype(at::kLong).device(device);
  const at::Tensor context = at::arange(query_length, long_options).unsqueeze(1) + past;
  const at::Tensor memory = at::arange(key_length, long_options).unsqueeze(0);
  const at::Tensor buckets =
      relative_position_bucket(memory - context, bidirectional_, num_buckets_, max_distance_);
  // [Tq, Tk, H] -> [1, H, Tq, Tk]
  return relative_attention_bias->forward(buckets).permute({2, 0, 1}).unsqueeze(0);
}

at::Tensor T5AttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& bias,
                                    const at::Tensor& key_value_states, KeyValueCache* cache,
                                    int64_t layer, std::pair<at::Tensor, at::Tensor>* cross_cache) {
  const int64_t batch = hidden.size(0), length = hidden.size(1);
  auto heads = [&](const at::Tensor& x) {
    return x.view({x.size(0), x.size(1), -1, d_kv_}).transpose(1, 2);
  };
  const at::Tensor query = heads(q->forward(hidden));
  at::Tensor keys, values;
  if (cross_cache && cross_cache->first.defined()) {
    std::tie(keys, values) = *cross_cache;
  } else {
    const at::Tensor& source = key_value_states.defined() ? key_value_states : hidden;
    keys = heads(k->forward(source));
    values = heads(v->forward(source));
    if (cross_cache) *cross_cache = {keys, values};
    if (cache) std::tie(keys, values) = cache->append(layer, keys, values);
  }
  const at::Tensor context = attention(query, keys, values, bias, dropout_, is_training(),
                                       /*is_causal=*/false, /*scale=*/1.0);
  return o->forward(context.transpose(1, 2).reshape({batch, length, num_heads_ * d_kv_}));
}

T5LayerAttentionImpl::T5LayerAttentionImpl(const T5Config& c, bool cross,
                                           bool has_relative_attention_bias, bool bidirectional) {
  attention = register_module(cross ? "EncDecAttention" : "SelfAttention",
                              T5Attention(c, has_relative_attention_bias, bidirectional));
  layer_norm = register_module("layer_norm", T5LayerNorm(c.d_model, c.layer_norm_epsilon));
  dropout = register_module("dropout", Dropout(c.dropout_rate));
}

at::Tensor T5LayerAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& bias,
                                         const at::Tensor& key_value_states, KeyValueCache* cache,
                                         int64_t layer,
                                         std::pair<at::Tensor, at::Tensor>* cross_cache) {
  return hidden + dropout->forward(attention->forward(layer_norm->forward(hidden), bias,
                                                      key_value_states, cache, layer, cross_cache));
}

T5LayerFFImpl::T5LayerFFImpl(const T5Config& c) : activation_(c.dense_act_fn()) {
  // DenseReluDense's parameters, under its name (layer.N.DenseReluDense.wi.weight).
  auto dense = register_module("DenseReluDense", std::make_shared<torch::nn::Module>());
  if (c.is_gated_act()) {
    wi_0 = dense->register_module("wi_0", t5_linear(c.d_model, c.d_ff));
    wi_1 = dense->register_module("wi_1", t5_linear(c.d_model, c.d_ff));
  } else {
    wi = dense->register_module("wi", t5_linear(c.d_model, c.d_ff));
  }
  wo = dense->register_module("wo", t5_linear(c.d_ff, c.d_model));
  inner_dropout = dense->register_module("dropout", Dropout(c.dropout_rate));
  layer_norm = register_module("layer_norm", T5LayerNorm(c.d_model, c.layer_norm_epsilon));
  dropout = register_module("dropout", Dropout(c.dropout_rate));
}

at::Tensor T5LayerFFImpl::forward(const at::Tensor& hidden) {
  const at::Tensor x = layer_norm->forward(hidden);
  const at::Tensor inner = wi ? apply_activation(activation_, wi->forward(x))
                              : apply_activation(activation_, wi_0->forward(x)) * wi_1->forward(x);
  return hidden + dropout->forward(wo->forward(inner_dropout->forward(inner)));
}

T5BlockImpl::T5BlockImpl(const T5Config& c, bool is_decoder, bool has_relative_attention_bias) {
  layer = register_module("layer", torch::nn::ModuleList());
  self_attention = T5LayerAttention(c, /*cross=*/false, has_relative_attention_bias,
                                    /*bidirectional=*/!is_decoder);
  layer->push_back(self_attention);
  if (is_decoder) {
    cross_attention = T5LayerAttention(c, /*cross=*/true, false, /*bidirectional=*/true);
    layer->push_back(cross_attention);
  }
  feed_forward = T5LayerFF(c);
  layer->push_back(feed_forward);
}

at::Tensor T5BlockImpl::forward(const at::Tensor& hidden, const at::Tensor& self_bias,
                                const at::Tensor& encoder_hidden, const at::Tensor& cross_bias,
                                KeyValueCache* cache, int64_t index,
                                std::pair<at::Tensor, at::Tensor>* cross_cache,
                                const std::function<at::Tensor()>* make_self_bias) {
  auto hooks = hook_point_.enter();
  last_self_bias = self_bias.defined() || !make_self_bias ? self_bias : (*make_self_bias)();
  at::Tensor out = self_attention->forward(hidden, last_self_bias, {}, cache, index);
  if (cross_attention && encoder_hidden.defined())
    out = cross_attention->forward(out, cross_bias, encoder_hidden, nullptr, index, cross_cache);
  return hooks.finish(feed_forward->forward(out));
}

T5StackImpl::T5StackImpl(const T5Config& c, bool is_decoder, torch::nn::Embedding shared)
    : shared_(std::move(shared)), is_decoder_(is_decoder), num_heads_(c.num_heads) {
  block = register_module("block", torch::nn::ModuleList());
  const int64_t layers = is_decoder ? c.num_decoder_layers : c.num_layers;
  for (int64_t i = 0; i < layers; ++i) {
    blocks.push_back(T5Block(c, is_decoder, /*has_relative_attention_bias=*/i == 0));
    block->push_back(blocks.back());
  }
  final_layer_norm =
      register_module("final_layer_norm", T5LayerNorm(c.d_model, c.layer_norm_epsilon));
  dropout = register_module("dropout", Dropout(c.dropout_rate));
}

at::Tensor T5StackImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                const at::Tensor& encoder_hidden,
                                const at::Tensor& encoder_attention_mask, KeyValueCache* cache,
                                CrossAttentionCache* cross_cache) {
  const int64_t length = input_ids.size(1);
  const int64_t past = cache ? cache->length() : 0;
  at::Tensor hidden =
      with_neftune_noise(shared_->forward(input_ids), neftune_noise_alpha, is_training());
  const at::Device device = hidden.device();

  // The self-attention's bias: relative positions (block 0 learns them), masked.
  at::Tensor mask;
  if (is_decoder_) {
    mask = cached_causal_mask(attention_mask, past, length);
    if (!mask.defined() && past == 0 && length > 1)
      mask = at::ones({length, length}, at::TensorOptions().dtype(at::kBool).device(device))
                 .tril()
                 .view({1, 1, length, length});
  } else if (attention_mask.defined() && !attention_mask.all().item<bool>()) {
    mask = attention_mask.to(at::kBool).view({attention_mask.size(0), 1, 1, length});
  }
  // The bias is made again inside a checkpointed block (from block 0's parameters), so that the
  // recompute differentiates its own graph, not this one.
  T5Attention first_attention = blocks.front()->self_attention->attention;
  const auto dtype = hidden.scalar_type();
  std::function<at::Tensor()> make_self_bias = [first_attention, mask, length, past, device,
                                                dtype]() mutable {
    return masked_bias(first_attention->compute_bias(length, past + length, past, device).to(dtype),
                       mask);
  };
  at::Tensor cross_bias;
  if (is_decoder_ && encoder_hidden.defined()) {
    // No relative positions across the two sequences: zeros, masked by the encoder's padding.
    const int64_t heads = num_heads_;
    at::Tensor encoder_mask;
    if (encoder_attention_mask.defined() && !encoder_attention_mask.all().item<bool>())
      encoder_mask = encoder_attention_mask.to(at::kBool).view(
          {encoder_attention_mask.size(0), 1, 1, encoder_attention_mask.size(1)});
    cross_bias = masked_bias(
        at::zeros({1, heads, length, encoder_hidden.size(1)}, hidden.options()), encoder_mask);
  }
  if (cross_cache && cross_cache->size() != blocks.size()) cross_cache->resize(blocks.size());

  hidden = dropout->forward(hidden);
  at::Tensor self_bias;
  const bool checkpointed = gradient_checkpointing_ && is_training() && at::GradMode::is_enabled();
  // A checkpointed block's only tensor input is its hidden state, so the decoder carries the
  // encoder's output along in it (positions T..T+S-1, passed through unchanged): its gradient
  // then reaches the encoder through every block's cross-attention.
  const bool carries_encoder = checkpointed && cross_bias.defined();
  if (carries_encoder) hidden = at::cat({hidden, encoder_hidden}, 1);
  for (size_t i = 0; i < blocks.size(); ++i) {
    T5Block& block = blocks[i];
    if (checkpointed) {
      // Block 0's relative positions are a parameter of every block: each adds its gradient.
      std::vector<at::Tensor> parameters;
      for (const at::Tensor& p : block->parameters())
        if (p.requires_grad()) parameters.push_back(p);
      const at::Tensor& positions = first_attention->relative_attention_bias->weight;
      if (i > 0 && positions.requires_grad()) parameters.push_back(positions);
      hidden = checkpoint(
          [block, make_self_bias, cross_bias, length,
           carries_encoder](const at::Tensor& x) mutable {
            if (!carries_encoder) return block->forward(x, make_self_bias());
            const at::Tensor encoder_part = x.narrow(1, length, x.size(1) - length);
            const at::Tensor out =
                block->forward(x.narrow(1, 0, length), make_self_bias(), encoder_part, cross_bias);
            return at::cat({out, encoder_part}, 1);
          },
          hidden, parameters);
    } else {
      // Block 0 makes the bias in its forward; the blocks after reuse it.
      auto* cross = cross_cache ? &(*cross_cache)[i] : nullptr;
      hidden = block->forward(hidden, self_bias, encoder_hidden, cross_bias, cache,
                              static_cast<int64_t>(i), cross, i == 0 ? &make_self_bias : nullptr);
      if (i == 0) self_bias = std::exchange(block->last_self_bias, at::Tensor());
    }
  }
  if (carries_encoder) hidden = hidden.narrow(1, 0, length);
  return dropout->forward(final_layer_norm->forward(hidden));
}

void init_t5_weights(torch::nn::Module& module, const T5Config& c,
                     const std::vector<std::string>* only) {
  const std::set<std::string> wanted =
      only ? std::set<std::string>(only->begin(), only->end()) : std::set<std::string>();
  torch::NoGradGuard no_grad;
  const double f = c.initializer_factor;
  const auto d_model = static_cast<double>(c.d_model);
  for (auto& item : module.named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    if (only && wanted.count(name) == 0) continue;
    at::Tensor& p = item.value();
    double std = f;  // shared, lm_head
    if (name.ends_with("layer_norm.weight")) {
      p.fill_(f);
      continue;
    }
    if (name.ends_with(".bias")) {
      p.zero_();
      continue;
    }
    if (name.ends_with(".q.weight"))
      std = f / std::sqrt(d_model * static_cast<double>(c.d_kv));
    else if (name.ends_with(".k.weight") || name.ends_with(".v.weight") ||
             name.ends_with("relative_attention_bias.weight") || name.ends_with(".wi.weight") ||
             name.ends_with(".wi_0.weight") || name.ends_with(".wi_1.weight"))
      std = f / std::sqrt(d_model);
    else if (name.ends_with(".o.weight"))
      std = f / std::sqrt(static_cast<double>(c.num_heads * c.d_kv));
    else if (name.ends_with(".wo.weight"))
      std = f / std::sqrt(static_cast<double>(c.d_ff));
    torch::nn::init::normal_(p, 0.0, std);
  }
}

}  // namespace ctrainer
