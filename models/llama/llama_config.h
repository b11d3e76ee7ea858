#pragma once
/// \file LlamaConfig: the hyper-parameters of a Llama model, read from and written to Hugging
/// Face's config.json (transformers 5's LlamaConfig names and defaults). RoPE comes as
/// transformers 5 writes it (rope_parameters: rope_type, rope_theta, factor, ...) or as older
/// files do (rope_theta and rope_scaling at the top level); both read to one RopeParameters.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/models/config_json.h>

namespace ctrainer {

/// Rotary position embedding settings (transformers' rope_parameters).
struct RopeParameters {
  /// "default", "linear" (positions divided by factor) or "llama3" (Llama 3.1's frequency-
  /// dependent scaling); dynamic, yarn, longrope and the others are refused by name.
  std::string rope_type = "default";
  double rope_theta = 10000.0;
  /// linear and llama3: the scaling factor.
  double factor = 1.0;
  /// llama3 only.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  /// The dict as read (other keys kept), written back with the values above.
  nlohmann::json json = nlohmann::json::object();
};

struct LlamaConfig : config_json::TaskHeadFields {
  static constexpr const char* kModelType = "llama";

  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  /// Grouped-query attention: key/value heads, a divisor of num_attention_heads (unset in
  /// config.json means num_attention_heads).
  int64_t num_key_value_heads = 32;
  /// Per-head width (unset in config.json means hidden_size / num_attention_heads).
  int64_t head_dim = 128;
  /// The MLP's gate activation ("silu"; any of activations.h).
  std::string hidden_act = "silu";
  int64_t max_position_embeddings = 2048;
  double initializer_range = 0.02;
  double rms_norm_eps = 1e-6;
  bool use_cache = true;
  std::optional<int64_t> pad_token_id;
  std::optional<int64_t> bos_token_id = 1;
  /// One id, a list of ids (Llama 3.1's) or null, as written.
  nlohmann::json eos_token_id = 2;
  bool tie_word_embeddings = false;
  RopeParameters rope;
  bool attention_bias = false;
  double attention_dropout = 0.0;
  bool mlp_bias = false;
  /// Every config.json key not listed above (pretraining_tp, ...), written back unchanged.
  nlohmann::json extra = nlohmann::json::object();

  std::optional<int64_t> max_positions() const { return max_position_embeddings; }

  /// Positive sizes, num_attention_heads divisible by num_key_value_heads, hidden_size by
  /// num_attention_heads, an even head_dim, a known activation and rope_type with its keys, ids
  /// inside the vocabulary, the task-head fields. Throws ArgumentError naming `source` and the
  /// key.
  void validate(const std::string& source = "LlamaConfig") const;
  /// The config as transformers 5 writes config.json (model_type "llama", rope_parameters).
  nlohmann::json to_json() const;
  static LlamaConfig from_json(const nlohmann::json& json,
                               const std::string& source = "config.json");
};

}  // namespace ctrainer
