#pragma once
// What the decoder model tests share: a causal-LM batch of two rows, the second right-padded
// (id 0) with its padding masked and its labels ignored (-100), and tiny Llama and GPT-2
// config.json objects.
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <ctrainer/core/batch.h>

namespace ctrainer::testing {

inline Batch ragged_lm_batch() {
  Batch batch;
  batch["input_ids"] = torch::tensor({{3, 5, 7, 9, 11}, {4, 6, 8, 0, 0}}, torch::kLong);
  batch["attention_mask"] = torch::tensor({{1, 1, 1, 1, 1}, {1, 1, 1, 0, 0}}, torch::kLong);
  batch["labels"] = torch::tensor({{3, 5, 7, 9, 11}, {4, 6, 8, -100, -100}}, torch::kLong);
  return batch;
}

/// config.json of a Llama small enough to train in tests: 2 layers 16 wide, grouped-query
/// attention (4 heads, 2 key/value heads), 40 tokens, untied head.
inline nlohmann::json tiny_llama_json() {
  return {{"model_type", "llama"},    {"vocab_size", 40},
          {"hidden_size", 16},        {"intermediate_size", 24},
          {"num_hidden_layers", 2},   {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"max_position_embeddings", 16}};
}

/// config.json of a GPT-2 as small: 2 layers 16 wide, 4 heads, 40 tokens, tied head, no dropout.
inline nlohmann::json tiny_gpt2_json() {
  return {{"model_type", "gpt2"}, {"vocab_size", 40},  {"n_positions", 16},
          {"n_embd", 16},         {"n_layer", 2},      {"n_head", 4},
          {"resid_pdrop", 0.0},   {"embd_pdrop", 0.0}, {"attn_pdrop", 0.0}};
}

}  // namespace ctrainer::testing
