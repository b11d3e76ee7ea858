// Padding-free packing: a batch that DataCollatorWithFlattening packs into one row (position ids
// restarting per sequence, no attention across sequences) gives a decoder the loss and gradients
// of the same sequences padded into a batch; and the packed-sequence indices in closed form.
// transformers does the same with packed position_ids: parity.llama_model / parity.gpt2_model
// (case lm_packed_position_ids).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <ctrainer/models/attention_mask.h>
#include <ctrainer/models/gpt2/gpt2_heads.h>
#include <ctrainer/models/llama/llama_heads.h>
#include <ctrainer/trainer/data/flattening_collator.h>
#include <ctrainer/trainer/data/language_modeling_collator.h>

#include "support/decoder_batches.h"

namespace ctrainer {
namespace packed_sequences_test {

/// Three sequences of 5, 2 and 7 tokens (ids 1..39: 0 is the pad).
std::vector<Example> sequences() {
  torch::manual_seed(11);
  std::vector<Example> out;
  for (int64_t length : {5, 2, 7}) {
    Example e;
    e.set("input_ids", at::randint(1, 40, {length}, at::kLong));
    e.set("attention_mask", at::ones({length}, at::kLong));
    out.push_back(e);
  }
  return out;
}

std::map<std::string, at::Tensor> loss_and_gradients(Model& model, const Batch& batch) {
  model.zero_grad();
  const ModelOutput out = model.forward(batch);
  out.loss.backward();
  std::map<std::string, at::Tensor> result{{"loss", out.loss.detach()}};
  for (const auto& p : model.named_parameters()) result[p.key()] = p.value().grad().clone();
  return result;
}

void expect_packed_equals_padded(Model& model) {
  model.eval();  // no dropout
  const std::vector<Example> examples = sequences();
  LanguageModelingCollatorOptions causal;
  causal.mlm = false;
  causal.pad_token_id = 0;
  const Batch padded = DataCollatorForLanguageModeling(causal)(examples);
  ASSERT_EQ(padded.at("input_ids").sizes(), (std::vector<int64_t>{3, 7}));
  const Batch packed = DataCollatorWithFlattening()(examples);
  ASSERT_EQ(packed.at("input_ids").sizes(), (std::vector<int64_t>{1, 14}));
  const auto a = loss_and_gradients(model, padded);
  const auto b = loss_and_gradients(model, packed);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, value] : a) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(at::allclose(value, b.at(name), 1e-5, 1e-6))
        << (value - b.at(name)).abs().max().item<double>();
  }
  // Without position ids the packed row is one long sequence: another loss.
  Batch unpositioned = packed;
  unpositioned.erase("position_ids");
  EXPECT_GT(std::abs(model.forward(unpositioned).loss.item<double>() - a.at("loss").item<double>()),
            1e-4);
}

TEST(PackedSequences, LlamaGivesThePaddedLossAndGradients) {
  torch::manual_seed(7);
  LlamaForCausalLM model(LlamaConfig::from_json(testing::tiny_llama_json(), "tiny llama"));
  expect_packed_equals_padded(model);
}

TEST(PackedSequences, Gpt2GivesThePaddedLossAndGradients) {
  torch::manual_seed(7);
  GPT2LMHeadModel model(GPT2Config::from_json(testing::tiny_gpt2_json(), "tiny gpt2"));
  expect_packed_equals_padded(model);
}

TEST(PackedSequences, SequenceIndicesRestartWhereThePositionsDo) {
  const at::Tensor positions =
      torch::tensor({{0, 1, 0, 1, 2, 0}, {0, 1, 2, 3, 4, 5}}, torch::kLong);
  EXPECT_TRUE(packed_sequence_indices(positions).equal(
      torch::tensor({{0, 0, 1, 1, 1, 2}, {0, 0, 0, 0, 0, 0}}, torch::kLong)));
  EXPECT_FALSE(packed_sequence_indices(positions.narrow(0, 1, 1)).defined());  // one sequence
  const at::Tensor mask = decoder_attention_mask({}, positions.narrow(0, 0, 1), 6);
  // Token 3 (second sequence, position 1) sees tokens 2 and 3 only.
  EXPECT_TRUE(mask[0][0][3].equal(torch::tensor({false, false, true, true, false, false})));
  // An attention_mask wins: no packing is looked for (as transformers).
  EXPECT_FALSE(
      decoder_attention_mask(torch::ones({1, 6}, torch::kLong), positions.narrow(0, 0, 1), 6)
          .defined());
}

}  // namespace packed_sequences_test
}  // namespace ctrainer
