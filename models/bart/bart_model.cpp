#include <ctrainer/models/bart/bart_model.h>

#include <cmath>
#include <set>
#include <tuple>

#include <torch/nn/init.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/activations.h>
#include <ctrainer/models/attention.h>
#include <ctrainer/models/attention_mask.h>
#include <ctrainer/models/gradient_checkpointing.h>
#include <ctrainer/models/neftune.h>

namespace ctrainer {
namespace {

constexpr int64_t kPositionOffset = 2;  // BartLearnedPositionalEmbedding's

AdaptableLinear bart_linear(int64_t in, int64_t out) {
  return AdaptableLinear(torch::nn::LinearOptions(in, out));
}

torch::nn::LayerNorm layer_norm(int64_t width) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}));
}

/// The encoder's padding as a boolean key mask [B, 1, 1, S], or undefined without padding.
at::Tensor key_padding_mask(const at::Tensor& attention_mask) {
  if (!attention_mask.defined() || attention_mask.all().item<bool>()) return {};
  return attention_mask.to(at::kBool).view({attention_mask.size(0), 1, 1, attention_mask.size(1)});
}

}  // namespace

BartAttentionImpl::BartAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout)
    : num_heads_(num_heads), head_dim_(embed_dim / num_heads), dropout_(dropout) {
  k_proj = register_module("k_proj", bart_linear(embed_dim, embed_dim));
  v_proj = register_module("v_proj", bart_linear(embed_dim, embed_dim));
  q_proj = register_module("q_proj", bart_linear(embed_dim, embed_dim));
  out_proj = register_module("out_proj", bart_linear(embed_dim, embed_dim));
}

at::Tensor BartAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                      bool is_causal, const at::Tensor& key_value_states,
                                      KeyValueCache* cache, int64_t layer,
                                      std::pair<at::Tensor, at::Tensor>* cross_cache) {
  const int64_t batch = hidden.size(0), length = hidden.size(1);
  auto heads = [&](const at::Tensor& x) {
    return x.view({x.size(0), x.size(1), num_heads_, head_dim_}).transpose(1, 2);
  };
  const at::Tensor query = heads(q_proj->forward(hidden));
  at::Tensor keys, values;
  if (cross_cache && cross_cache->first.defined()) {
    std::tie(keys, values) = *cross_cache;
  } else {
    const at::Tensor& source = key_value_states.defined() ? key_value_states : hidden;
    keys = heads(k_proj->forward(source));
    values = heads(v_proj->forward(source));
    if (cross_cache) *cross_cache = {keys, values};
    if (cache) std::tie(keys, values) = cache->append(layer, keys, values);
  }
  const at::Tensor context = attention(query, keys, values, mask, dropout_, is_training(),
                                       is_causal, 1.0 / std::sqrt(static_cast<double>(head_dim_)));
  return out_proj->forward(
      context.transpose(1, 2).reshape({batch, length, num_heads_ * head_dim_}));
}

BartFeedForward::BartFeedForward(torch::nn::Module& owner, const BartConfig& c, int64_t ffn_dim)
    : activation_(c.activation_function) {
  fc1 = owner.register_module("fc1", bart_linear(c.d_model, ffn_dim));
  fc2 = owner.register_module("fc2", bart_linear(ffn_dim, c.d_model));
  final_layer_norm = owner.register_module("final_layer_norm", layer_norm(c.d_model));
  // Registered so that train() / eval() reach them; they hold no parameters.
  dropout = owner.register_module("feed_forward_dropout", Dropout(c.dropout));
  activation_dropout = owner.register_module("activation_dropout", Dropout(c.activation_dropout));
}

at::Tensor BartFeedForward::forward(const at::Tensor& hidden) {
  const at::Tensor inner =
      activation_dropout->forward(apply_activation(activation_, fc1->forward(hidden)));
  return final_layer_norm->forward(hidden + dropout->forward(fc2->forward(inner)));
}

BartEncoderLayerImpl::BartEncoderLayerImpl(const BartConfig& c) {
  self_attn = register_module(
      "self_attn", BartAttention(c.d_model, c.encoder_attention_heads, c.attention_dropout));
  self_attn_layer_norm = register_module("self_attn_layer_norm", layer_norm(c.d_model));
  feed_forward = BartFeedForward(*this, c, c.encoder_ffn_dim);
  dropout_ = register_module("dropout", Dropout(c.dropout));
}

at::Tensor BartEncoderLayerImpl::forward(const at::Tensor& hidden, const at::Tensor& mask) {
  auto hooks = hook_point_.enter();
  const at::Tensor attended = self_attn_layer_norm->forward(
      hidden + dropout_->forward(self_attn->forward(hidden, mask, /*is_causal=*/false)));
  return hooks.finish(feed_forward.forward(attended));
}

BartDecoderLayerImpl::BartDecoderLayerImpl(const BartConfig& c) {
  self_attn = register_module(
      "self_attn", BartAttention(c.d_model, c.decoder_attention_heads, c.attention_dropout));
  self_attn_layer_norm = register_module("self_attn_layer_norm", layer_norm(c.d_model));
  encoder_attn = register_module(
      "encoder_attn", BartAttention(c.d_model, c.decoder_attention_heads, c.attention_dropout));
  encoder_attn_layer_norm = register_module("encoder_attn_layer_norm", layer_norm(c.d_model));
  feed_forward = BartFeedForward(*this, c, c.decoder_ffn_dim);
  dropout_ = register_module("dropout", Dropout(c.dropout));
}

at::Tensor BartDecoderLayerImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                         bool is_causal, const at::Tensor& encoder_hidden,
                                         const at::Tensor& encoder_mask, KeyValueCache* cache,
                                         int64_t index,
                                         std::pair<at::Tensor, at::Tensor>* cross_cache) {
  auto hooks = hook_point_.enter();
  at::Tensor out = self_attn_layer_norm->forward(
      hidden + dropout_->forward(self_attn->forward(hidden, mask, is_causal, {}, cache, index)));
  if (encoder_hidden.defined())
    out = encoder_attn_layer_norm->forward(out + dropout_->forward(encoder_attn->forward(
                                                     out, encoder_mask, /*is_causal=*/false,
                                                     encoder_hidden, nullptr, index, cross_cache)));
  return hooks.finish(feed_forward.forward(out));
}

BartModelImpl::BartModelImpl(const BartConfig& c)
    : config_(c),
      embed_scale_(c.scale_embedding ? std::sqrt(static_cast<double>(c.d_model)) : 1.0) {
  auto embedding = torch::nn::EmbeddingOptions(c.vocab_size, c.d_model);
  if (c.pad_token_id) embedding.padding_idx(*c.pad_token_id);
  shared = register_module("shared", torch::nn::Embedding(embedding));
  encoder = register_module("encoder", std::make_shared<torch::nn::Module>());
  decoder = register_module("decoder", std::make_shared<torch::nn::Module>());
  const int64_t positions = c.max_position_embeddings + kPositionOffset;
  encoder_positions =
      encoder->register_module("embed_positions", torch::nn::Embedding(positions, c.d_model));
  decoder_positions =
      decoder->register_module("embed_positions", torch::nn::Embedding(positions, c.d_model));
  auto encoder_list = encoder->register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    encoder_layers.push_back(BartEncoderLayer(c));
    encoder_list->push_back(encoder_layers.back());
  }
  auto decoder_list = decoder->register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    decoder_layers.push_back(BartDecoderLayer(c));
    decoder_list->push_back(decoder_layers.back());
  }
  encoder_layernorm = encoder->register_module("layernorm_embedding", layer_norm(c.d_model));
  decoder_layernorm = decoder->register_module("layernorm_embedding", layer_norm(c.d_model));
  dropout_ = register_module("dropout", Dropout(c.dropout));
}

at::Tensor BartModelImpl::embed(const at::Tensor& input_ids, int64_t past,
                                torch::nn::Embedding& positions, torch::nn::LayerNorm& layernorm) {
  const int64_t length = input_ids.size(1);
  if (past + length > config_.max_position_embeddings)
    throw ArgumentError("BART: " + std::to_string(past + length) +
                        " positions are more than the model's max_position_embeddings (" +
                        std::to_string(config_.max_position_embeddings) +
                        "); truncate the input or generate fewer tokens");
  const at::Tensor tokens =
      with_neftune_noise(shared->forward(input_ids), neftune_noise_alpha, is_training()) *
      embed_scale_;
  const at::Tensor index = at::arange(past + kPositionOffset, past + length + kPositionOffset,
                                      input_ids.options().dtype(at::kLong));
  return dropout_->forward(layernorm->forward(tokens + positions->forward(index)));
}

bool BartModelImpl::drop_layer(double probability) {
  return is_training() && probability > 0.0 && at::rand({}).item<float>() < probability;
}

at::Tensor BartModelImpl::encode(const at::Tensor& input_ids, const at::Tensor& attention_mask) {
  at::Tensor hidden = embed(input_ids, 0, encoder_positions, encoder_layernorm);
  const at::Tensor mask = key_padding_mask(attention_mask);
  for (BartEncoderLayer& layer : encoder_layers) {
    if (drop_layer(config_.encoder_layerdrop)) continue;
    if (gradient_checkpointing_ && is_training() && at::GradMode::is_enabled()) {
      std::vector<at::Tensor> parameters;
      for (const at::Tensor& p : layer->parameters())
        if (p.requires_grad()) parameters.push_back(p);
      hidden =
          checkpoint([layer, mask](const at::Tensor& x) mutable { return layer->forward(x, mask); },
                     hidden, parameters);
    } else {
      hidden = layer->forward(hidden, mask);
    }
  }
  return hidden;
}

at::Tensor BartModelImpl::decode(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                 const at::Tensor& encoder_hidden, const at::Tensor& encoder_mask,
                                 KeyValueCache* cache, CrossAttentionCache* cross_cache) {
  const int64_t length = input_ids.size(1);
  const int64_t past = cache ? cache->length() : 0;
  at::Tensor hidden = embed(input_ids, past, decoder_positions, decoder_layernorm);
  const at::Tensor mask = cached_causal_mask(attention_mask, past, length);
  const bool is_causal = !mask.defined() && past == 0;
  const at::Tensor cross_mask = key_padding_mask(encoder_mask);
  if (cross_cache && cross_cache->size() != decoder_layers.size())
    cross_cache->resize(decoder_layers.size());
  const bool checkpointed = gradient_checkpointing_ && is_training() && at::GradMode::is_enabled();
  // A checkpointed layer's only tensor input is its hidden state: the encoder's output travels
  // in it (positions T..), so its gradient reaches the encoder through every cross-attention.
  if (checkpointed) hidden = at::cat({hidden, encoder_hidden}, 1);
  for (size_t i = 0; i < decoder_layers.size(); ++i) {
    BartDecoderLayer& layer = decoder_layers[i];
    if (drop_layer(config_.decoder_layerdrop)) continue;
    if (checkpointed) {
      std::vector<at::Tensor> parameters;
      for (const at::Tensor& p : layer->parameters())
        if (p.requires_grad()) parameters.push_back(p);
      hidden = checkpoint(
          [layer, mask, is_causal, cross_mask, length](const at::Tensor& x) mutable {
            const at::Tensor encoded = x.narrow(1, length, x.size(1) - length);
            return at::cat(
                {layer->forward(x.narrow(1, 0, length), mask, is_causal, encoded, cross_mask),
                 encoded},
                1);
          },
          hidden, parameters);
    } else {
      hidden = layer->forward(hidden, mask, is_causal, encoder_hidden, cross_mask, cache,
                              static_cast<int64_t>(i), cross_cache ? &(*cross_cache)[i] : nullptr);
    }
  }
  return checkpointed ? hidden.narrow(1, 0, length) : hidden;
}

void init_bart_weights(torch::nn::Module& module, const BartConfig& c,
                       const std::vector<std::string>* only) {
  const std::set<std::string> wanted =
      only ? std::set<std::string>(only->begin(), only->end()) : std::set<std::string>();
  torch::NoGradGuard no_grad;
  auto init = [&](const std::string& name, at::Tensor& p) {
    if (only && wanted.count(name) == 0) return;
    const bool layer_norm_param = name.find("layer_norm") != std::string::npos ||
                                  name.find("layernorm_embedding") != std::string::npos;
    if (name.ends_with(".bias") || name == "final_logits_bias") {
      p.zero_();
    } else if (layer_norm_param) {
      p.fill_(1.0);
    } else {
      torch::nn::init::normal_(p, 0.0, c.init_std);
      if (name.ends_with("shared.weight") && c.pad_token_id) p[*c.pad_token_id].zero_();
    }
  };
  for (auto& item : module.named_parameters(/*recurse=*/true)) init(item.key(), item.value());
  for (auto& item : module.named_buffers(/*recurse=*/true)) init(item.key(), item.value());
}

}  // namespace ctrainer
