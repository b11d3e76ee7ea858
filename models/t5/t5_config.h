#pragma once
/// \file T5Config: the hyper-parameters of a T5 model (T5 and T5 v1.1 / FLAN-T5), read from and
/// written to Hugging Face's config.json with transformers 5's names, defaults and aliases
/// (hidden_size = d_model, num_attention_heads = num_heads, num_hidden_layers = num_layers,
/// head_dim = d_kv).
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/models/config_json.h>

namespace ctrainer {

struct T5Config : config_json::TaskHeadFields {
  static constexpr const char* kModelType = "t5";

  int64_t vocab_size = 32128;
  int64_t d_model = 512;
  int64_t d_kv = 64;  ///< per-head width (d_model need not be num_heads * d_kv)
  int64_t d_ff = 2048;
  int64_t num_layers = 6;
  int64_t num_decoder_layers = 6;  ///< unset in config.json: num_layers
  int64_t num_heads = 8;
  int64_t relative_attention_num_buckets = 32;
  int64_t relative_attention_max_distance = 128;
  double dropout_rate = 0.1;
  double layer_norm_epsilon = 1e-6;
  double initializer_factor = 1.0;
  /// "relu" (T5), "gated-gelu" (T5 v1.1, FLAN-T5), or "[gated-]<activation>".
  std::string feed_forward_proj = "relu";
  bool use_cache = true;
  std::optional<int64_t> pad_token_id = 0;
  nlohmann::json eos_token_id = 1;  ///< an id, a list of ids or null, as written
  std::optional<int64_t> decoder_start_token_id;
  /// Whether lm_head is shared.weight. transformers 5 ties T5's head whenever the checkpoint
  /// does not hold a different lm_head.weight; config.json's false (T5 v1.1, FLAN-T5, whose
  /// checkpoints hold their own head) unties it here.
  bool tie_word_embeddings = true;
  /// Whether the decoder output is scaled by d_model^-0.5 before lm_head: original T5 does it,
  /// v1.1 does not. config.json's scale_decoder_outputs, else tie_word_embeddings not false.
  bool scale_decoder_outputs = true;
  double classifier_dropout = 0.0;
  /// Every config.json key not listed above, written back unchanged.
  nlohmann::json extra = nlohmann::json::object();

  /// The feed-forward's activation (the part after "gated-"; "gated-gelu" means gelu_new).
  std::string dense_act_fn() const;
  /// Whether the feed-forward is gated (wi_0, wi_1) rather than one wi.
  bool is_gated_act() const;
  /// T5 has no position limit (relative positions): nothing.
  std::optional<int64_t> max_positions() const { return std::nullopt; }

  /// Positive sizes, a known activation in feed_forward_proj, probabilities in [0, 1], ids inside
  /// the vocabulary. Throws ArgumentError naming `source` and the key.
  void validate(const std::string& source = "T5Config") const;
  /// The config as transformers 5 writes config.json.
  nlohmann::json to_json() const;
  static T5Config from_json(const nlohmann::json& json, const std::string& source = "config.json");
};

}  // namespace ctrainer
