// GPT-2: its config.json (HF's names, aliases and refusals), the heads through the registry,
// causality, tied embeddings, saving and loading, gradient checkpointing, the classifier's
// pooling. Values against transformers: tests/parity/gpt2_model_parity.py.
#include <gtest/gtest.h>

#include <filesystem>

#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/gpt2/gpt2_family.h>
#include <ctrainer/models/gpt2/gpt2_heads.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/registry/model_registry.h>

#include "support/decoder_batches.h"
#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer {
namespace gpt2_model_test {

namespace fs = std::filesystem;
using testing::expect_error;

nlohmann::json tiny_json() {
  return {{"model_type", "gpt2"}, {"vocab_size", 50},  {"n_positions", 16},  {"n_embd", 16},
          {"n_layer", 2},         {"n_head", 4},       {"resid_pdrop", 0.0}, {"embd_pdrop", 0.0},
          {"attn_pdrop", 0.0},    {"bos_token_id", 1}, {"eos_token_id", 2}};
}

GPT2Config tiny_config(nlohmann::json overrides = nlohmann::json::object()) {
  nlohmann::json json = tiny_json();
  json.update(overrides);
  return GPT2Config::from_json(json, "tiny.json");
}

TEST(GPT2Config, ReadsHuggingFacesNamesAndWritesThemBack) {
  nlohmann::json json = tiny_json();
  json["n_ctx"] = 16;  // old checkpoints' key: kept
  json["id2label"] = {{"0", "neg"}, {"1", "pos"}};
  const GPT2Config config = GPT2Config::from_json(json, "c.json");
  EXPECT_EQ(config.n_embd, 16);
  EXPECT_EQ(config.inner_size(), 64);
  EXPECT_EQ(config.activation_function, "gelu_new");
  EXPECT_TRUE(config.tie_word_embeddings);
  EXPECT_FALSE(config.pad_token_id);
  EXPECT_EQ(config.id2label, (std::vector<std::string>{"neg", "pos"}));
  const nlohmann::json written = config.to_json();
  EXPECT_EQ(written.at("n_ctx"), 16);
  EXPECT_EQ(written.at("n_inner"), nullptr);
  EXPECT_EQ(written.at("model_type"), "gpt2");
  EXPECT_EQ(GPT2Config::from_json(written, "again").to_json(), written);
}

TEST(GPT2Config, GenericNamesAreItsAliasesAndItsOwnNamesWin) {
  // HF's attribute_map: hidden_size -> n_embd, num_hidden_layers -> n_layer, ...
  const GPT2Config config = GPT2Config::from_json({{"hidden_size", 24},
                                                   {"num_hidden_layers", 3},
                                                   {"num_attention_heads", 6},
                                                   {"max_position_embeddings", 40},
                                                   {"n_layer", 5}},
                                                  "c.json");
  EXPECT_EQ(config.n_embd, 24);
  EXPECT_EQ(config.n_head, 6);
  EXPECT_EQ(config.n_positions, 40);
  EXPECT_EQ(config.n_layer, 5);
  EXPECT_FALSE(config.to_json().contains("hidden_size"));
}

TEST(GPT2Config, BadValuesNameTheFileAndTheKey) {
  auto with = [](nlohmann::json overrides) { return [overrides] { tiny_config(overrides); }; };
  expect_error(with({{"add_cross_attention", true}}),
               {"tiny.json", "add_cross_attention", "not supported"});
  expect_error(with({{"n_embd", 18}}), {"tiny.json", "'n_embd' (18)", "multiple of 'n_head' (4)"});
  expect_error(with({{"activation_function", "swiglu"}}),
               {"tiny.json", "activation_function", "swiglu", "gelu_new"});
  expect_error(with({{"n_layer", "2"}}), {"tiny.json", "'n_layer' must be an integer", "\"2\""});
  expect_error(with({{"tie_word_embeddings", 1}}),
               {"tiny.json", "'tie_word_embeddings' must be true or false"});
  expect_error(with({{"pad_token_id", 50}}), {"tiny.json", "pad_token_id", "outside"});
  expect_error(with({{"eos_token_id", {2, "3"}}}),
               {"tiny.json", "eos_token_id", "list of integers"});
  expect_error(with({{"model_type", "bert"}}), {"tiny.json", "a GPT-2 model needs \"gpt2\""});
  expect_error(with({{"attn_pdrop", 1.5}}), {"tiny.json", "attn_pdrop", "[0, 1]"});
}

TEST(GPT2Registry, AutoModelBuildsTheHeadOfTheTask) {
  const auto config = AutoConfig::from_json(tiny_json(), "tiny.json");
  EXPECT_EQ(config->model_type(), "gpt2");
  EXPECT_EQ(config->max_positions(), 16);
  EXPECT_NE(std::dynamic_pointer_cast<GPT2LMHeadModel>(
                AutoModel::from_config(*config, ModelTask::kCausalLM)),
            nullptr);
  EXPECT_NE(std::dynamic_pointer_cast<GPT2ForSequenceClassification>(
                AutoModel::from_config(*config, ModelTask::kSequenceClassification)),
            nullptr);
  expect_error([&] { AutoModel::from_config(*config, ModelTask::kMaskedLM); },
               {"AutoModelForMaskedLM", "GPT2LMHeadModel"});
  nlohmann::json by_architecture = tiny_json();
  by_architecture.erase("model_type");
  by_architecture["architectures"] = {"GPT2LMHeadModel"};
  EXPECT_EQ(AutoConfig::from_json(by_architecture, "c.json")->model_type(), "gpt2");
}

TEST(GPT2LMHead, TiedHeadIsTheEmbeddingAndAnUntiedOneIsAParameterOfItsOwn) {
  torch::manual_seed(0);
  GPT2LMHeadModel tied(tiny_config());
  GPT2LMHeadModel untied(tiny_config({{"tie_word_embeddings", false}}));
  EXPECT_FALSE(tied.named_parameters().contains("lm_head.weight"));
  EXPECT_TRUE(untied.named_parameters().contains("lm_head.weight"));
  EXPECT_EQ(untied.parameters().size(), tied.parameters().size() + 1);
  // Tied: the logits are the hidden states times the embedding matrix.
  tied.eval();
  torch::NoGradGuard no_grad;
  const Batch batch = testing::ragged_lm_batch();
  const at::Tensor hidden = tied.transformer->forward(batch.at("input_ids"));
  EXPECT_TRUE(at::allclose(tied.forward(batch).logits.select(0, 0),
                           hidden.select(0, 0).matmul(tied.transformer->wte->weight.t()), 1e-5,
                           1e-6));
}

TEST(GPT2LMHead, ACheckpointWithADifferentHeadKeepsItAsTransformers5Does) {
  torch::manual_seed(0);
  GPT2LMHeadModel model(tiny_config());
  const std::string folder = testing::fresh_output_dir("head");
  save_pretrained(model, folder);
  const std::string weights = folder + "/model.safetensors";
  auto tensors = load_safetensors(weights).tensors;
  // An lm_head.weight equal to the embedding: still one tied parameter.
  tensors["lm_head.weight"] = tensors.at("transformer.wte.weight").clone();
  save_safetensors(weights, tensors, {{"format", "pt"}});
  EXPECT_FALSE(GPT2LMHeadModel::from_pretrained(tiny_config(), folder)->lm_head);
  // A different one: its own parameter, with the checkpoint's values.
  tensors["lm_head.weight"] = tensors.at("transformer.wte.weight") * 2;
  save_safetensors(weights, tensors, {{"format", "pt"}});
  const auto untied = GPT2LMHeadModel::from_pretrained(tiny_config(), folder);
  ASSERT_TRUE(untied->lm_head);
  EXPECT_TRUE(untied->lm_head->weight.equal(tensors.at("lm_head.weight")));
  std::filesystem::remove_all(folder);
}

TEST(GPT2LMHead, LogitsOfATokenDoNotSeeLaterTokens) {
  torch::manual_seed(1);
  GPT2LMHeadModel model(tiny_config());
  model.eval();
  torch::NoGradGuard no_grad;
  Batch a, b;
  a["input_ids"] = torch::tensor({{3, 5, 7, 9, 11}}, torch::kLong);
  b["input_ids"] = torch::tensor({{3, 5, 7, 40, 41}}, torch::kLong);
  const at::Tensor la = model.forward(a).logits, lb = model.forward(b).logits;
  EXPECT_TRUE(at::equal(la.narrow(1, 0, 3), lb.narrow(1, 0, 3)));
  EXPECT_FALSE(at::allclose(la.narrow(1, 3, 1), lb.narrow(1, 3, 1)));
  // A padded row computes what the unpadded row does at its tokens (mask path vs is_causal).
  Batch padded = testing::ragged_lm_batch(), alone;
  alone["input_ids"] = torch::tensor({{4, 6, 8}}, torch::kLong);
  EXPECT_TRUE(at::allclose(model.forward(padded).logits.select(0, 1).narrow(0, 0, 3),
                           model.forward(alone).logits.select(0, 0), 1e-5, 1e-6));
}

TEST(GPT2LMHead, LossIsTheMeanOverShiftedLabelsThatAreNotIgnored) {
  torch::manual_seed(2);
  GPT2LMHeadModel model(tiny_config());
  model.eval();
  torch::NoGradGuard no_grad;
  const Batch batch = testing::ragged_lm_batch();
  const ModelOutput out = model.forward(batch);
  // Position t predicts label t + 1: 4 targets in row 0, 2 in row 1.
  const at::Tensor log_probs = at::log_softmax(out.logits, -1);
  double total = 0;
  int count = 0;
  const auto labels = batch.at("labels");
  for (int64_t row = 0; row < 2; ++row)
    for (int64_t t = 0; t + 1 < 5; ++t) {
      const int64_t target = labels[row][t + 1].item<int64_t>();
      if (target == -100) continue;
      total -= log_probs[row][t][target].item<double>();
      ++count;
    }
  EXPECT_EQ(count, 6);
  EXPECT_NEAR(out.loss.item<double>(), total / count, 1e-5);
}

TEST(GPT2LMHead, SavedFolderLoadsBackWithTheSameLogits) {
  torch::manual_seed(3);
  for (bool tie : {true, false}) {
    GPT2LMHeadModel model(tiny_config({{"tie_word_embeddings", tie}}));
    model.eval();
    const fs::path dir = testing::fresh_output_dir(tie ? "gpt2_tied" : "gpt2_untied");
    save_pretrained(model, dir.string());
    const auto loaded = AutoModel::from_pretrained(dir.string(), ModelTask::kCausalLM);
    loaded->eval();
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(at::equal(model.forward(testing::ragged_lm_batch()).logits,
                          loaded->forward(testing::ragged_lm_batch()).logits))
        << "tie_word_embeddings " << tie;
    EXPECT_EQ(loaded->config()->at("architectures"), nlohmann::json({"GPT2LMHeadModel"}));
  }
}

TEST(GPT2LMHead, GradientCheckpointingGivesTheSameLossAndGradients) {
  auto grads_of = [](bool checkpointing) {
    torch::manual_seed(4);
    GPT2LMHeadModel model(tiny_config({{"resid_pdrop", 0.2}, {"attn_pdrop", 0.1}}));
    model.gradient_checkpointing_enable(checkpointing);
    model.train();
    torch::manual_seed(5);  // the same dropout masks on both paths
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

TEST(GPT2ForSequenceClassification, PoolsTheLastTokenThatIsNotPadding) {
  torch::manual_seed(6);
  GPT2ForSequenceClassification model(tiny_config({{"pad_token_id", 0}, {"num_labels", 3}}));
  model.eval();
  torch::NoGradGuard no_grad;
  Batch right, left, alone;
  right["input_ids"] = torch::tensor({{4, 6, 8, 0, 0}}, torch::kLong);
  right["attention_mask"] = torch::tensor({{1, 1, 1, 0, 0}}, torch::kLong);
  left["input_ids"] = torch::tensor({{0, 0, 4, 6, 8}}, torch::kLong);
  left["attention_mask"] = torch::tensor({{0, 0, 1, 1, 1}}, torch::kLong);
  alone["input_ids"] = torch::tensor({{4, 6, 8}}, torch::kLong);
  const at::Tensor expected = model.forward(alone).logits;
  EXPECT_EQ(expected.sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(at::allclose(model.forward(right).logits, expected, 1e-5, 1e-6));
  // Left padding shifts the positions, so only the pooled row's index is checked: the last.
  const at::Tensor hidden =
      model.transformer->forward(left.at("input_ids"), left.at("attention_mask"));
  EXPECT_TRUE(at::allclose(model.forward(left).logits, model.score->forward(hidden.select(1, 4)),
                           1e-5, 1e-6));
}

TEST(GPT2ForSequenceClassification, WithoutAPadTokenOnlyBatchesOfOne) {
  torch::manual_seed(7);
  GPT2ForSequenceClassification model(tiny_config());
  Batch two;
  two["input_ids"] = torch::tensor({{4, 6}, {5, 7}}, torch::kLong);
  expect_error([&] { model.forward(two); }, {"more than one sequence", "pad_token_id"});
  Batch one;
  one["input_ids"] = torch::tensor({{4, 6}}, torch::kLong);
  one["labels"] = torch::tensor({1}, torch::kLong);
  const ModelOutput out = model.forward(one);
  EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(model.config()->at("problem_type"), "single_label_classification");
}

TEST(GPT2Model, RefusesInputsLongerThanItsPositions) {
  GPT2LMHeadModel model(tiny_config());
  Batch batch;
  batch["input_ids"] = torch::zeros({1, 17}, torch::kLong);
  EXPECT_THROW(model.forward(batch), c10::Error);
}

}  // namespace gpt2_model_test
}  // namespace ctrainer
