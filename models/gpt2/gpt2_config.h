#pragma once
/// \file GPT2Config: the hyper-parameters of a GPT-2 model, read from and written to Hugging
/// Face's config.json (transformers.GPT2Config field names and defaults, those of the 124M
/// "gpt2" checkpoint). Keys this struct does not know (summary_* of the double-heads model,
/// n_ctx of old checkpoints, architectures, ...) are kept and written back on save.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/models/config_json.h>

namespace ctrainer {

struct GPT2Config : config_json::TaskHeadFields {
  static constexpr const char* kModelType = "gpt2";

  int64_t vocab_size = 50257;
  /// The longest input (learned positions; HF max_position_embeddings).
  int64_t n_positions = 1024;
  /// Hidden width (HF hidden_size).
  int64_t n_embd = 768;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  /// The MLP's inner width; unset means 4 * n_embd.
  std::optional<int64_t> n_inner;
  /// "gelu_new" (GPT-2's tanh approximation), "gelu" or "relu".
  std::string activation_function = "gelu_new";
  double resid_pdrop = 0.1;
  double embd_pdrop = 0.1;
  double attn_pdrop = 0.1;
  double layer_norm_epsilon = 1e-5;
  double initializer_range = 0.02;
  /// Scale attention scores by 1 / sqrt(head_dim).
  bool scale_attn_weights = true;
  /// Also divide attention scores by the layer's index + 1.
  bool scale_attn_by_inverse_layer_idx = false;
  /// transformers honours it only with attn_implementation "eager" (fp32 scores under autocast);
  /// its default, SDPA, ignores it, and so does ctrainer (kept and written back).
  bool reorder_and_upcast_attn = false;
  bool tie_word_embeddings = true;
  bool use_cache = true;
  std::optional<int64_t> bos_token_id = 50256;
  /// One id, a list of ids or null, as written.
  nlohmann::json eos_token_id = 50256;
  /// The padding id: GPT2ForSequenceClassification pools the last token that is not padding;
  /// without one it takes batches of one sequence only (as HF).
  std::optional<int64_t> pad_token_id;
  /// Every config.json key not listed above, written back unchanged by to_json().
  nlohmann::json extra = nlohmann::json::object();

  std::optional<int64_t> max_positions() const { return n_positions; }
  int64_t inner_size() const { return n_inner.value_or(4 * n_embd); }
  int64_t head_dim() const { return n_embd / n_head; }

  /// Positive sizes, n_embd divisible by n_head, probabilities in [0, 1], a supported activation,
  /// ids inside the vocabulary, the task-head fields; no cross-attention (add_cross_attention is
  /// refused: no encoder feeds a GPT-2 here). Throws ArgumentError naming `source` and the key.
  void validate(const std::string& source = "GPT2Config") const;
  /// The config as HF writes config.json (model_type "gpt2").
  nlohmann::json to_json() const;
  /// Parses a config.json object (HF's attribute_map names hidden_size, num_hidden_layers,
  /// num_attention_heads and max_position_embeddings are read too); errors name `source` and the
  /// key.
  static GPT2Config from_json(const nlohmann::json& json,
                              const std::string& source = "config.json");
};

}  // namespace ctrainer
