// BART: its config.json (aliases, refusals), the head tied or not as transformers 5 decides from
// the checkpoint, final_logits_bias saved as a buffer, gradient checkpointing, LayerDrop's
// draws, the position limit. Values against transformers: tests/parity/bart_model_parity.py.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/bart/bart_heads.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/registry/model_registry.h>

#include "support/expect_error.h"

namespace ctrainer {
namespace bart_model_test {

namespace fs = std::filesystem;
using testing::expect_error;

nlohmann::json tiny_json() {
  return {{"model_type", "bart"},          {"vocab_size", 40},      {"d_model", 16},
          {"encoder_layers", 2},           {"decoder_layers", 2},   {"encoder_attention_heads", 4},
          {"decoder_attention_heads", 4},  {"encoder_ffn_dim", 24}, {"decoder_ffn_dim", 24},
          {"max_position_embeddings", 16}, {"dropout", 0.1}};
}

std::shared_ptr<BartForConditionalGeneration> tiny_model(nlohmann::json overrides = {}) {
  nlohmann::json json = tiny_json();
  if (overrides.is_object()) json.update(overrides);
  return std::dynamic_pointer_cast<BartForConditionalGeneration>(
      AutoModel::from_config(*AutoConfig::from_json(json, "bart.json"), ModelTask::kSeq2SeqLM));
}

TEST(BartConfig, ReadsTransformersNamesAndRefusesWhatItCannotBuild) {
  nlohmann::json json = tiny_json();
  json["forced_bos_token_id"] = 0;  // kept for generation
  const BartConfig config = BartConfig::from_json(json, "c.json");
  EXPECT_EQ(config.pad_token_id, 1);  // BART's defaults
  EXPECT_EQ(config.decoder_start_token_id, 2);
  const nlohmann::json written = config.to_json();
  EXPECT_EQ(written.at("forced_bos_token_id"), 0);
  EXPECT_EQ(BartConfig::from_json(written, "again").to_json(), written);
  EXPECT_EQ(BartConfig::from_json(
                {{"hidden_size", 24}, {"num_attention_heads", 3}, {"decoder_attention_heads", 3}},
                "a")
                .encoder_attention_heads,
            3);
  auto with = [](nlohmann::json overrides) {
    return [overrides] {
      nlohmann::json j = tiny_json();
      j.update(overrides);
      BartConfig::from_json(j, "bart.json");
    };
  };
  expect_error(with({{"decoder_attention_heads", 5}}), {"bart.json", "decoder_attention_heads"});
  expect_error(with({{"activation_function", "tanh"}}), {"bart.json", "activation_function"});
  expect_error(with({{"encoder_layerdrop", 1.5}}), {"bart.json", "encoder_layerdrop"});
  expect_error(with({{"normalize_before", true}}), {"bart.json", "mBART"});
}

Batch tiny_batch(int64_t target_length = 5) {
  Batch batch;
  batch.set("input_ids", at::randint(3, 40, {3, 9}, at::kLong));
  at::Tensor mask = at::ones({3, 9}, at::kLong);
  mask[1].narrow(0, 5, 4).zero_();
  batch.set("attention_mask", mask);
  at::Tensor labels = at::randint(3, 40, {3, target_length}, at::kLong);
  labels[2].narrow(0, 3, target_length - 3).fill_(-100);
  batch.set("labels", labels);
  return batch;
}

TEST(BartForConditionalGeneration, GradientCheckpointingGivesThePlainGradients) {
  torch::manual_seed(4);
  auto model = tiny_model();
  const Batch batch = tiny_batch();
  auto gradients = [&](bool checkpointed) {
    model->zero_grad();
    model->gradient_checkpointing_enable(checkpointed);
    torch::manual_seed(9);
    model->forward(batch).loss.backward();
    std::map<std::string, at::Tensor> grads;
    for (const auto& p : model->named_parameters())
      grads[p.key()] = p.value().grad().defined() ? p.value().grad().clone() : at::Tensor();
    return grads;
  };
  const auto plain = gradients(false);
  const auto checkpointed = gradients(true);
  for (const auto& [name, grad] : plain) {
    ASSERT_TRUE(grad.defined()) << name;
    ASSERT_TRUE(checkpointed.at(name).defined()) << name;
    EXPECT_TRUE(at::allclose(checkpointed.at(name), grad, 1e-6, 1e-7)) << name;
  }
}

TEST(BartForConditionalGeneration, LayerDropSkipsLayersWithOneDrawEach) {
  // With LayerDrop 1 every layer is skipped in training (one torch.rand per layer, as HF), so
  // the output is the embeddings' alone; in eval mode no layer is skipped.
  auto model = tiny_model({{"encoder_layerdrop", 1.0}, {"dropout", 0.0}});
  const Batch batch = tiny_batch();
  model->train();
  const at::Tensor skipped = model->forward(batch).tensors.at("encoder_last_hidden_state");
  const at::Tensor embeddings = model->model->encoder_layernorm->forward(
      model->model->shared->forward(batch.at("input_ids")) +
      model->model->encoder_positions->forward(at::arange(2, 11, at::kLong)));
  EXPECT_TRUE(at::allclose(skipped, embeddings));
  model->eval();
  EXPECT_FALSE(
      at::allclose(model->forward(batch).tensors.at("encoder_last_hidden_state"), embeddings));
}

TEST(BartForConditionalGeneration, TheHeadAndTheLogitsBiasAsTransformersSavesThem) {
  const fs::path folder = fs::temp_directory_path() / ("bart_head_" + std::to_string(::getpid()));
  torch::manual_seed(5);
  auto model = tiny_model();
  EXPECT_FALSE(model->lm_head);
  {
    torch::NoGradGuard no_grad;
    model->final_logits_bias.normal_();
  }
  save_pretrained(*model, folder.string());
  auto tensors = load_safetensors((folder / "model.safetensors").string()).tensors;
  ASSERT_TRUE(tensors.count("final_logits_bias"));
  EXPECT_FALSE(tensors.count("lm_head.weight"));
  auto loaded = std::dynamic_pointer_cast<BartForConditionalGeneration>(
      AutoModel::from_pretrained(folder.string(), ModelTask::kSeq2SeqLM));
  EXPECT_TRUE(loaded->final_logits_bias.equal(model->final_logits_bias));
  EXPECT_FALSE(loaded->lm_head);
  tensors["lm_head.weight"] = tensors.at("model.shared.weight") * 2;
  save_safetensors((folder / "model.safetensors").string(), tensors, {{"format", "pt"}});
  auto untied = std::dynamic_pointer_cast<BartForConditionalGeneration>(
      AutoModel::from_pretrained(folder.string(), ModelTask::kSeq2SeqLM));
  ASSERT_TRUE(untied->lm_head);
  EXPECT_TRUE(untied->lm_head->weight.equal(tensors.at("lm_head.weight")));
  fs::remove_all(folder);
}

TEST(BartForConditionalGeneration, PositionsPastTheTableAreNamed) {
  auto model = tiny_model();
  Batch batch;
  batch.set("input_ids", at::randint(3, 40, {1, 17}, at::kLong));
  batch.set("labels", at::randint(3, 40, {1, 3}, at::kLong));
  expect_error([&] { model->forward(batch); }, {"17 positions", "max_position_embeddings (16)"});
}

}  // namespace bart_model_test
}  // namespace ctrainer
