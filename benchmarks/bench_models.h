#pragma once
// Model shapes shared by several benchmark scenarios.
#include <ctrainer/models/bert/bert_config.h>

namespace ctrainer::bench {

/// BERT-mini (google/bert_uncased_L-4_H-256_A-4: 4 layers, hidden 256, 4 heads, ffn 1024, BERT's
/// vocabulary and dropout) with a 2-label classification head; a 1-layer, hidden-64 model with
/// `quick` (a smoke test of the harness, not a measurement).
inline BertConfig bert_mini_config(bool quick) {
  BertConfig config;
  config.vocab_size = 30522;
  config.hidden_size = quick ? 64 : 256;
  config.num_hidden_layers = quick ? 1 : 4;
  config.num_attention_heads = 4;
  config.intermediate_size = quick ? 128 : 1024;
  config.set_num_labels(2);
  return config;
}

}  // namespace ctrainer::bench
