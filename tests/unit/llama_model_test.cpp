// Llama: its config.json (transformers 5's rope_parameters and the older rope_theta /
// rope_scaling keys, grouped-query attention, refusals), the heads through the registry, RoPE's
// frequencies, the padding row of the embedding, gradient checkpointing. Values against
// transformers: tests/parity/llama_model_parity.py.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/llama/llama_family.h>
#include <ctrainer/models/llama/llama_heads.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/registry/model_registry.h>

#include "support/decoder_batches.h"
#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer {
namespace llama_model_test {

namespace fs = std::filesystem;
using testing::expect_error;

nlohmann::json tiny_json() {
  return {{"model_type", "llama"},    {"vocab_size", 40},
          {"hidden_size", 16},        {"intermediate_size", 24},
          {"num_hidden_layers", 2},   {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"max_position_embeddings", 32}};
}

LlamaConfig tiny_config(nlohmann::json overrides = nlohmann::json::object()) {
  nlohmann::json json = tiny_json();
  json.update(overrides);
  return LlamaConfig::from_json(json, "tiny.json");
}

TEST(LlamaConfig, DefaultsAndDerivedSizesAsTransformers) {
  nlohmann::json json = tiny_json();
  json.erase("num_key_value_heads");
  json["pretraining_tp"] = 1;
  const LlamaConfig config = LlamaConfig::from_json(json, "c.json");
  EXPECT_EQ(config.num_key_value_heads, 4);  // unset: num_attention_heads
  EXPECT_EQ(config.head_dim, 4);             // unset: hidden_size / heads
  EXPECT_EQ(config.hidden_act, "silu");
  EXPECT_FALSE(config.tie_word_embeddings);
  EXPECT_EQ(config.rope.rope_type, "default");
  EXPECT_EQ(config.rope.rope_theta, 10000.0);
  const nlohmann::json written = config.to_json();
  EXPECT_EQ(written.at("rope_parameters"),
            nlohmann::json({{"rope_type", "default"}, {"rope_theta", 10000.0}}));
  EXPECT_EQ(written.at("pretraining_tp"), 1);
  EXPECT_EQ(LlamaConfig::from_json(written, "again").to_json(), written);
}

TEST(LlamaConfig, OlderRopeKeysReadAsTransformers5ReadsThem) {
  const LlamaConfig config = tiny_config({{"rope_theta", 500000.0},
                                          {"rope_scaling",
                                           {{"type", "llama3"},
                                            {"factor", 8.0},
                                            {"low_freq_factor", 1.0},
                                            {"high_freq_factor", 4.0},
                                            {"original_max_position_embeddings", 8192}}},
                                          {"eos_token_id", {128001, 128008, 128009}}});
  EXPECT_EQ(config.rope.rope_type, "llama3");
  EXPECT_EQ(config.rope.rope_theta, 500000.0);
  EXPECT_EQ(config.rope.factor, 8.0);
  EXPECT_EQ(config.to_json().at("rope_parameters").at("rope_theta"), 500000.0);
  EXPECT_FALSE(config.to_json().contains("rope_scaling"));
  EXPECT_EQ(config.to_json().at("eos_token_id"), nlohmann::json({128001, 128008, 128009}));
}

TEST(LlamaConfig, BadValuesNameTheFileAndTheKey) {
  auto with = [](nlohmann::json overrides) { return [overrides] { tiny_config(overrides); }; };
  expect_error(with({{"num_key_value_heads", 3}}),
               {"tiny.json", "'num_attention_heads' (4)", "multiple of 'num_key_value_heads' (3)"});
  expect_error(with({{"rope_parameters", {{"rope_type", "yarn"}, {"factor", 4.0}}}}),
               {"tiny.json: rope_parameters", "yarn", "default, linear and llama3"});
  expect_error(with({{"rope_parameters", {{"rope_type", "linear"}}}}),
               {"rope_parameters", "linear needs 'factor'"});
  expect_error(with({{"rope_scaling", {{"type", "llama3"}, {"factor", 8.0}}}}),
               {"rope_parameters", "llama3 needs 'low_freq_factor'"});
  expect_error(with({{"head_dim", 5}}), {"tiny.json", "'head_dim' (5)", "even"});
  expect_error(with({{"hidden_act", "swiglu"}}), {"tiny.json", "hidden_act", "swiglu"});
  expect_error(with({{"model_type", "mistral"}}), {"tiny.json", "a Llama model needs \"llama\""});
  expect_error(with({{"eos_token_id", "</s>"}}), {"tiny.json", "eos_token_id"});
  // Mistral, Qwen2 and others are their own model_type: refused by name, the known ones listed.
  nlohmann::json mistral = tiny_json();
  mistral["model_type"] = "mistral";
  expect_error([&] { AutoConfig::from_json(mistral, "m.json"); },
               {"unknown model_type \"mistral\"", "bert, gpt2, llama"});
}

TEST(LlamaRope, FrequenciesFollowTheRopeType) {
  LlamaConfig config = tiny_config({{"head_dim", 8}, {"rope_parameters", {{"rope_theta", 100.0}}}});
  const at::Tensor base = rope_inverse_frequencies(config);
  ASSERT_EQ(base.size(0), 4);
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(base[i].item<float>(), static_cast<float>(1.0 / std::pow(100.0, 2.0 * i / 8)));
  config.rope.rope_type = "linear";
  config.rope.factor = 4.0;
  EXPECT_TRUE(at::allclose(rope_inverse_frequencies(config), base / 4));
  // llama3 with an original context of 64: wavelengths under 64 / high_freq_factor (16) kept,
  // over 64 / low_freq_factor (64) divided by factor, those between interpolated.
  config.rope.rope_type = "llama3";
  config.rope.original_max_position_embeddings = 64;
  const at::Tensor scaled = rope_inverse_frequencies(config);
  EXPECT_FLOAT_EQ(scaled[0].item<float>(), base[0].item<float>());      // wavelength 6.3
  EXPECT_FLOAT_EQ(scaled[3].item<float>(), base[3].item<float>() / 4);  // wavelength 199
  const double f1 = base[1].item<float>(), wavelength = 2 * M_PI / f1;  // 19.9
  const double smooth = (64 / wavelength - 1.0) / (4.0 - 1.0);
  EXPECT_NEAR(scaled[1].item<float>(), (1 - smooth) * f1 / 4 + smooth * f1, 1e-6);
}

TEST(LlamaCausalLM, ThePaddingRowOfTheEmbeddingGetsNoGradient) {
  torch::manual_seed(0);
  LlamaForCausalLM model(tiny_config({{"pad_token_id", 0}}));
  EXPECT_TRUE(at::equal(model.model->embed_tokens->weight[0], torch::zeros({16})));
  const ModelOutput out = model.forward(testing::ragged_lm_batch());
  out.loss.backward();
  const at::Tensor grad = model.model->embed_tokens->weight.grad();
  EXPECT_TRUE(at::equal(grad[0], torch::zeros({16})));
  EXPECT_GT(grad[3].abs().sum().item<float>(), 0.0f);
}

TEST(LlamaCausalLM, SavedFolderLoadsBackThroughTheRegistry) {
  torch::manual_seed(1);
  for (bool tie : {false, true}) {
    LlamaForCausalLM model(tiny_config({{"tie_word_embeddings", tie}}));
    EXPECT_EQ(model.named_parameters().contains("lm_head.weight"), !tie);
    model.eval();
    const fs::path dir = testing::fresh_output_dir(tie ? "llama_tied" : "llama_untied");
    save_pretrained(model, dir.string());
    const auto loaded = AutoModel::from_pretrained(dir.string(), ModelTask::kCausalLM);
    ASSERT_NE(std::dynamic_pointer_cast<LlamaForCausalLM>(loaded), nullptr);
    loaded->eval();
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(at::equal(model.forward(testing::ragged_lm_batch()).logits,
                          loaded->forward(testing::ragged_lm_batch()).logits));
  }
  const auto config = AutoConfig::from_json(tiny_json(), "tiny.json");
  EXPECT_NE(std::dynamic_pointer_cast<LlamaForSequenceClassification>(
                AutoModel::from_config(*config, ModelTask::kSequenceClassification)),
            nullptr);
}

TEST(LlamaCausalLM, ATiedConfigWhoseCheckpointHasADifferentHeadKeepsIt) {
  torch::manual_seed(0);
  const LlamaConfig tied = tiny_config({{"tie_word_embeddings", true}});
  LlamaForCausalLM model(tied);
  EXPECT_FALSE(model.lm_head);
  const std::string folder = testing::fresh_output_dir("head");
  save_pretrained(model, folder);
  const std::string weights = folder + "/model.safetensors";
  auto tensors = load_safetensors(weights).tensors;
  tensors["lm_head.weight"] = tensors.at("model.embed_tokens.weight").clone();
  save_safetensors(weights, tensors, {{"format", "pt"}});
  EXPECT_FALSE(LlamaForCausalLM::from_pretrained(tied, folder)->lm_head);  // equal: tied
  tensors["lm_head.weight"] = tensors.at("model.embed_tokens.weight") + 1;
  save_safetensors(weights, tensors, {{"format", "pt"}});
  const auto untied = LlamaForCausalLM::from_pretrained(tied, folder);
  ASSERT_TRUE(untied->lm_head);
  EXPECT_TRUE(untied->lm_head->weight.equal(tensors.at("lm_head.weight")));
  std::filesystem::remove_all(folder);
}

TEST(LlamaCausalLM, GradientCheckpointingGivesTheSameLossAndGradients) {
  auto grads_of = [](bool checkpointing) {
    torch::manual_seed(2);
    LlamaForCausalLM model(tiny_config({{"attention_dropout", 0.2}}));
    model.gradient_checkpointing_enable(checkpointing);
    model.train();
    torch::manual_seed(3);
    const ModelOutput out = model.forward(testing::ragged_lm_batch());
    out.loss.backward();
    std::vector<at::Tensor> grads{out.loss.detach()};
    for (const auto& p : model.parameters()) grads.push_back(p.grad().clone());
    return grads;
  };
  const auto plain = grads_of(false), checkpointed = grads_of(true);
  ASSERT_EQ(plain.size(), checkpointed.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(at::equal(plain[i], checkpointed[i])) << i;
}

}  // namespace llama_model_test
}  // namespace ctrainer
