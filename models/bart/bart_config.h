#pragma once
/// \file BartConfig: the hyper-parameters of a BART model, read from and written to Hugging
/// Face's config.json with transformers 5's names, defaults and aliases (hidden_size = d_model,
/// num_attention_heads = encoder_attention_heads, num_hidden_layers = encoder_layers).
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/models/config_json.h>

namespace ctrainer {

struct BartConfig : config_json::TaskHeadFields {
  static constexpr const char* kModelType = "bart";

  int64_t vocab_size = 50265;
  /// Learned positions: the tables hold max_position_embeddings + 2 rows (BART's offset).
  int64_t max_position_embeddings = 1024;
  int64_t d_model = 1024;
  int64_t encoder_layers = 12, decoder_layers = 12;
  int64_t encoder_ffn_dim = 4096, decoder_ffn_dim = 4096;
  int64_t encoder_attention_heads = 16, decoder_attention_heads = 16;
  /// LayerDrop: in training, each layer is skipped with this probability (torch.rand per layer).
  double encoder_layerdrop = 0.0, decoder_layerdrop = 0.0;
  std::string activation_function = "gelu";
  double dropout = 0.1, attention_dropout = 0.0, activation_dropout = 0.0;
  double init_std = 0.02;
  double classifier_dropout = 0.0;
  /// Token embeddings times sqrt(d_model).
  bool scale_embedding = false;
  bool use_cache = true;
  std::optional<int64_t> pad_token_id = 1;
  std::optional<int64_t> bos_token_id = 0;
  nlohmann::json eos_token_id = 2;  ///< an id, a list of ids or null, as written
  std::optional<int64_t> decoder_start_token_id = 2;
  nlohmann::json forced_eos_token_id = 2;  ///< kept for generation (from_model_config)
  bool tie_word_embeddings = true;
  /// Every config.json key not listed above (forced_bos_token_id, num_beams, ...), kept.
  nlohmann::json extra = nlohmann::json::object();

  std::optional<int64_t> max_positions() const { return max_position_embeddings; }

  /// Positive sizes, d_model divisible by both head counts, a known activation, probabilities in
  /// [0, 1], ids inside the vocabulary. Throws ArgumentError naming `source` and the key.
  void validate(const std::string& source = "BartConfig") const;
  nlohmann::json to_json() const;
  static BartConfig from_json(const nlohmann::json& json,
                              const std::string& source = "config.json");
};

}  // namespace ctrainer
