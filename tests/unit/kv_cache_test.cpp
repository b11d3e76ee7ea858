// The key/value cache of GPT-2 and Llama: a cache's bookkeeping, the masks of cached steps, and
// that decoding one token at a time through the cache gives the logits of one full forward
// (left padding, grouped-query attention; T5's self- and cross-attention); generate() with and
// without the cache agrees.
// Token ids against transformers' generate(): tests/parity/generate_parity.py.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/attention_mask.h>
#include <ctrainer/models/causal_lm.h>
#include <ctrainer/models/generation/generate.h>
#include <ctrainer/models/kv_cache.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/seq2seq_lm.h>

#include "support/expect_error.h"

namespace ctrainer {
namespace kv_cache_test {

using testing::expect_error;

TEST(KeyValueCache, AppendsAlongPositionsAndKeepsSelectedRows) {
  KeyValueCache cache(2);
  EXPECT_EQ(cache.length(), 0);
  const at::Tensor k1 = at::arange(2 * 1 * 3 * 2, at::kFloat).view({2, 1, 3, 2});
  const auto [keys, values] = cache.append(0, k1, -k1);
  EXPECT_TRUE(keys.equal(k1));
  EXPECT_EQ(cache.length(0), 3);
  EXPECT_EQ(cache.length(1), 0);
  const at::Tensor k2 = at::full({2, 1, 1, 2}, 100.0);
  const auto [all_keys, all_values] = cache.append(0, k2, -k2);
  EXPECT_EQ(cache.length(0), 4);
  EXPECT_TRUE(all_keys.narrow(2, 3, 1).equal(k2));
  EXPECT_TRUE(all_values.narrow(2, 0, 3).equal(-k1));
  cache.select_rows(at::tensor({1, 1, 0}, at::kLong));  // beams may repeat a row
  const auto [reordered, unused] =
      cache.append(0, at::zeros({3, 1, 1, 2}), at::zeros({3, 1, 1, 2}));
  EXPECT_EQ(reordered.size(0), 3);
  EXPECT_TRUE(reordered[0].equal(reordered[1]));
  EXPECT_TRUE(reordered[2].narrow(1, 0, 3).equal(k1[0]));
  EXPECT_THROW(cache.length(2), std::out_of_range);
  expect_error([] { KeyValueCache(0); }, {"at least one layer"});
}

TEST(CachedCausalMask, QueriesSeeTheCacheAndTheirOwnPastButNoPadding) {
  // No padding: nothing to mask for a prefill (is_causal) or a single new token.
  EXPECT_FALSE(cached_causal_mask({}, 0, 4).defined());
  EXPECT_FALSE(cached_causal_mask({}, 5, 1).defined());
  EXPECT_FALSE(cached_causal_mask(at::ones({2, 6}, at::kLong), 5, 1).defined());
  // Two new tokens after two cached: [1 1 1 0], [1 1 1 1] (bottom-right aligned).
  const at::Tensor causal = cached_causal_mask({}, 2, 2);
  EXPECT_TRUE(causal.equal(at::tensor({1, 1, 1, 0, 1, 1, 1, 1}).to(at::kBool).view({1, 1, 2, 4})));
  // A left-padded row: its first position is never a key.
  const at::Tensor padded =
      cached_causal_mask(at::tensor({0, 1, 1, 1}, at::kLong).view({1, 4}), 3, 1);
  EXPECT_TRUE(padded.equal(at::tensor({0, 1, 1, 1}).to(at::kBool).view({1, 1, 1, 4})));
  expect_error(
      [] {
        cached_causal_mask(at::zeros({1, 3}, at::kLong), 3, 1);
      },
      {"3 positions", "holds 3", "1 are new"});
}

nlohmann::json family_json(const std::string& family) {
  if (family == "gpt2")
    return {{"model_type", "gpt2"}, {"vocab_size", 40}, {"n_positions", 32}, {"n_embd", 16},
            {"n_layer", 2},         {"n_head", 4},      {"bos_token_id", 1}, {"eos_token_id", 2}};
  return {{"model_type", "llama"},
          {"vocab_size", 40},
          {"hidden_size", 16},
          {"intermediate_size", 24},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"max_position_embeddings", 32},
          {"tie_word_embeddings", false},
          {"bos_token_id", 1},
          {"eos_token_id", 2},
          {"pad_token_id", 0}};
}

std::shared_ptr<Model> tiny_decoder(const std::string& family) {
  torch::manual_seed(3);
  auto model = AutoModel::from_config(*AutoConfig::from_json(family_json(family), "tiny.json"),
                                      ModelTask::kCausalLM);
  model->eval();
  return model;
}

class CachedDecoding : public ::testing::TestWithParam<std::string> {};

TEST_P(CachedDecoding, OneTokenAtATimeGivesTheLogitsOfOneFullForward) {
  torch::NoGradGuard no_grad;
  const auto model = tiny_decoder(GetParam());
  auto& decoder = dynamic_cast<CausalLanguageModel&>(*model);
  // Row 1 is left-padded by 3; positions count its tokens only, as generate() makes them.
  const at::Tensor ids = at::randint(3, 40, {2, 9}, at::kLong);
  at::Tensor mask = at::ones({2, 9}, at::kLong);
  mask[1].narrow(0, 0, 3).zero_();
  const at::Tensor positions = (mask.cumsum(-1) - 1).masked_fill(mask.eq(0), 0);
  Batch batch;
  batch.set("input_ids", ids);
  batch.set("attention_mask", mask);
  batch.set("position_ids", positions);
  const at::Tensor full = model->forward(batch).logits;

  KeyValueCache cache(decoder.num_decoder_layers());
  const int64_t prompt = 5;
  at::Tensor step = decoder.next_token_logits(ids.narrow(1, 0, prompt), mask.narrow(1, 0, prompt),
                                              positions.narrow(1, 0, prompt), cache);
  EXPECT_TRUE(at::allclose(step, full.select(1, prompt - 1), 1e-5, 1e-5));
  for (int64_t t = prompt; t < 9; ++t) {
    step = decoder.next_token_logits(ids.narrow(1, t, 1), mask.narrow(1, 0, t + 1),
                                     positions.narrow(1, t, 1), cache);
    EXPECT_EQ(cache.length(), t + 1);
    EXPECT_TRUE(at::allclose(step, full.select(1, t), 1e-5, 1e-5)) << "position " << t;
  }
}

TEST_P(CachedDecoding, GenerateWithAndWithoutTheCacheAgree) {
  const auto model = tiny_decoder(GetParam());
  auto& decoder = dynamic_cast<CausalLanguageModel&>(*model);
  at::Tensor ids = at::randint(3, 40, {2, 6}, at::kLong);
  at::Tensor mask = at::ones({2, 6}, at::kLong);
  mask[0].narrow(0, 0, 2).zero_();
  const auto settings = [](bool use_cache, int64_t beams) {
    return generation::GenerationConfig::from_json(
        {{"max_new_tokens", 7}, {"use_cache", use_cache}, {"num_beams", beams}}, "call");
  };
  const generation::GenerationConfig defaults;
  for (int64_t beams : {1, 3}) {
    const auto cached = generation::generate(decoder, ids, mask, settings(true, beams), defaults);
    const auto uncached =
        generation::generate(decoder, ids, mask, settings(false, beams), defaults);
    EXPECT_EQ(cached.sequences.size(1), 13);
    EXPECT_TRUE(cached.sequences.equal(uncached.sequences)) << beams << " beams";
    EXPECT_TRUE(cached.sequences.narrow(1, 0, 6).equal(ids));
  }
}

TEST_P(CachedDecoding, GenerateRefusesMalformedInputs) {
  const auto model = tiny_decoder(GetParam());
  auto& decoder = dynamic_cast<CausalLanguageModel&>(*model);
  const generation::GenerationConfig none;
  expect_error([&] { generation::generate(decoder, at::zeros({4}, at::kLong), {}, none, none); },
               {"input_ids", "[batch, prompt_length]"});
  expect_error(
      [&] {
        generation::generate(decoder, at::zeros({1, 4}, at::kLong), at::ones({1, 3}), none, none);
      },
      {"attention_mask", "[batch, 4]"});
}

INSTANTIATE_TEST_SUITE_P(Families, CachedDecoding, ::testing::Values("gpt2", "llama"));

nlohmann::json seq2seq_json(const std::string& family) {
  if (family == "t5")
    return {{"model_type", "t5"},
            {"vocab_size", 40},
            {"d_model", 16},
            {"d_kv", 4},
            {"d_ff", 24},
            {"num_layers", 2},
            {"num_heads", 4},
            {"feed_forward_proj", "gated-gelu"},
            {"decoder_start_token_id", 0},
            {"eos_token_id", 1}};
  return {{"model_type", "bart"},          {"vocab_size", 40},       {"d_model", 16},
          {"encoder_layers", 2},           {"decoder_layers", 2},    {"encoder_attention_heads", 4},
          {"decoder_attention_heads", 2},  {"encoder_ffn_dim", 24},  {"decoder_ffn_dim", 24},
          {"max_position_embeddings", 32}, {"scale_embedding", true}};
}

std::shared_ptr<Model> tiny_seq2seq(const std::string& family) {
  torch::manual_seed(6);
  auto model = AutoModel::from_config(*AutoConfig::from_json(seq2seq_json(family), "tiny.json"),
                                      ModelTask::kSeq2SeqLM);
  model->eval();
  return model;
}

class CachedSeq2SeqDecoding : public ::testing::TestWithParam<std::string> {};

TEST_P(CachedSeq2SeqDecoding, OneTokenAtATimeGivesTheLogitsOfOneFullForward) {
  torch::NoGradGuard no_grad;
  const auto model = tiny_seq2seq(GetParam());
  auto& seq2seq = dynamic_cast<Seq2SeqLanguageModel&>(*model);
  const at::Tensor source = at::randint(2, 40, {2, 7}, at::kLong);
  at::Tensor source_mask = at::ones({2, 7}, at::kLong);
  source_mask[0].narrow(0, 4, 3).zero_();
  const at::Tensor decoder_ids = at::randint(2, 40, {2, 6}, at::kLong);
  Batch batch;
  batch.set("input_ids", source);
  batch.set("attention_mask", source_mask);
  batch.set("decoder_input_ids", decoder_ids);
  const at::Tensor full = model->forward(batch).logits;

  const at::Tensor encoded = seq2seq.encode(source, source_mask);
  KeyValueCache cache(seq2seq.num_decoder_layers());
  CrossAttentionCache cross;
  for (int64_t t = 0; t < 6; ++t) {
    const at::Tensor step = seq2seq.decoder_next_token_logits(decoder_ids.narrow(1, t, 1), encoded,
                                                              source_mask, cache, cross);
    EXPECT_TRUE(at::allclose(step, full.select(1, t), 1e-5, 1e-5)) << "position " << t;
  }
  EXPECT_EQ(cache.length(), 6);
  EXPECT_EQ(cross.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Families, CachedSeq2SeqDecoding, ::testing::Values("t5", "bart"));

TEST_P(CachedSeq2SeqDecoding, GenerateWithAndWithoutTheCacheAgree) {
  const auto model = tiny_seq2seq(GetParam());
  auto& seq2seq = dynamic_cast<Seq2SeqLanguageModel&>(*model);
  const at::Tensor source = at::randint(2, 40, {2, 5}, at::kLong);
  for (int64_t beams : {1, 3}) {
    const auto settings = [beams](bool use_cache) {
      return generation::GenerationConfig::from_json(
          {{"max_new_tokens", 6}, {"use_cache", use_cache}, {"num_beams", beams}}, "call");
    };
    // The model's settings, as a folder without generation_config.json gives them.
    const auto defaults =
        generation::GenerationConfig::from_model_config(*model->config(), "config.json");
    const auto cached = generation::generate(seq2seq, source, {}, settings(true), defaults);
    const auto uncached = generation::generate(seq2seq, source, {}, settings(false), defaults);
    EXPECT_TRUE(cached.sequences.equal(uncached.sequences)) << beams << " beams";
    const int64_t start = GetParam() == "t5" ? 0 : 2;  // each family's decoder_start_token_id
    EXPECT_TRUE(cached.sequences.select(1, 0).eq(start).all().item<bool>());
  }
  // Without decoder_start_token_id or bos_token_id there is nothing to start from.
  nlohmann::json no_start = {{"model_type", "t5"}, {"vocab_size", 40}, {"d_model", 8},  {"d_kv", 2},
                             {"d_ff", 8},          {"num_layers", 1},  {"num_heads", 2}};
  auto unstartable =
      AutoModel::from_config(*AutoConfig::from_json(no_start, "t5.json"), ModelTask::kSeq2SeqLM);
  const generation::GenerationConfig none;
  expect_error(
      [&] {
        generation::generate(dynamic_cast<Seq2SeqLanguageModel&>(*unstartable), source, {}, none,
                             none);
      },
      {"decoder_start_token_id or bos_token_id"});
}

}  // namespace kv_cache_test
}  // namespace ctrainer
