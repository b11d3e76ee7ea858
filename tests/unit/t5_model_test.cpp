// T5: its config.json (aliases, v1.1's untied head and unscaled output, refusals), relative
// position buckets on closed forms, the head tied or not as transformers 5 decides from the
// checkpoint, gradient checkpointing, and saving and loading. Values against transformers:
// tests/parity/t5_model_parity.py.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/t5/t5_heads.h>

#include "support/expect_error.h"

namespace ctrainer {
namespace t5_model_test {

namespace fs = std::filesystem;
using testing::expect_error;

nlohmann::json tiny_json() {
  return {{"model_type", "t5"}, {"vocab_size", 40},    {"d_model", 16},
          {"d_kv", 4},          {"d_ff", 24},          {"num_layers", 2},
          {"num_heads", 4},     {"dropout_rate", 0.1}, {"decoder_start_token_id", 0}};
}

TEST(T5Config, ReadsTransformersNamesAndV11Settings) {
  nlohmann::json json = tiny_json();
  json["feed_forward_proj"] = "gated-gelu";
  json["tie_word_embeddings"] = false;
  json["n_positions"] = 512;  // old files' key: kept
  const T5Config config = T5Config::from_json(json, "c.json");
  EXPECT_EQ(config.num_decoder_layers, 2);  // unset: num_layers
  EXPECT_TRUE(config.is_gated_act());
  EXPECT_EQ(config.dense_act_fn(), "gelu_new");
  EXPECT_FALSE(config.scale_decoder_outputs);  // v1.1: the output is not rescaled
  EXPECT_EQ(config.pad_token_id, 0);
  const nlohmann::json written = config.to_json();
  EXPECT_EQ(written.at("n_positions"), 512);
  EXPECT_EQ(written.at("scale_decoder_outputs"), false);
  EXPECT_EQ(T5Config::from_json(written, "again").to_json(), written);
  // transformers' attribute_map aliases, T5's own names winning.
  const T5Config aliased = T5Config::from_json({{"hidden_size", 24},
                                                {"num_attention_heads", 3},
                                                {"num_hidden_layers", 5},
                                                {"num_layers", 1}},
                                               "a.json");
  EXPECT_EQ(aliased.d_model, 24);
  EXPECT_EQ(aliased.num_heads, 3);
  EXPECT_EQ(aliased.num_layers, 1);
}

TEST(T5Config, RefusesWhatItCannotBuildNamingTheKey) {
  auto with = [](nlohmann::json overrides) {
    return [overrides] {
      nlohmann::json json = tiny_json();
      json.update(overrides);
      T5Config::from_json(json, "t5.json");
    };
  };
  expect_error(with({{"feed_forward_proj", "gated-tanhshrink"}}), {"t5.json", "feed_forward_proj"});
  expect_error(with({{"feed_forward_proj", "dense-relu"}}), {"t5.json", "feed_forward_proj"});
  expect_error(with({{"d_kv", 0}}), {"t5.json", "'d_kv'"});
  expect_error(with({{"relative_attention_max_distance", 8}}),
               {"t5.json", "relative_attention_max_distance"});
  expect_error(with({{"is_decoder", true}}), {"t5.json", "is_decoder"});
  expect_error(with({{"model_type", "bart"}}), {"t5.json"});
}

TEST(RelativePositionBucket, MatchesMeshTensorflowsFormula) {
  const at::Tensor positions = at::tensor({0, 1, -1, 7, 8, -20, 200}, at::kLong);
  // Bidirectional, 32 buckets (16 a side, 8 exact), max_distance 128.
  EXPECT_TRUE(relative_position_bucket(positions, true, 32, 128)
                  .equal(at::tensor({0, 17, 1, 23, 24, 10, 31}, at::kLong)));
  // Causal: positive distances (the future) all in bucket 0; 16 exact buckets.
  const at::Tensor past = at::tensor({0, 5, -3, -15, -20, -1000}, at::kLong);
  EXPECT_TRUE(relative_position_bucket(past, false, 32, 128)
                  .equal(at::tensor({0, 0, 3, 15, 17, 31}, at::kLong)));
}

Batch tiny_batch() {
  Batch batch;
  batch.set("input_ids", at::randint(2, 40, {3, 9}, at::kLong));
  at::Tensor mask = at::ones({3, 9}, at::kLong);
  mask[1].narrow(0, 5, 4).zero_();
  batch.set("attention_mask", mask);
  at::Tensor labels = at::randint(2, 40, {3, 5}, at::kLong);
  labels[2].narrow(0, 3, 2).fill_(-100);
  batch.set("labels", labels);
  return batch;
}

TEST(T5ForConditionalGeneration, GradientCheckpointingGivesThePlainGradients) {
  torch::manual_seed(4);
  auto model = std::dynamic_pointer_cast<T5ForConditionalGeneration>(AutoModel::from_config(
      *AutoConfig::from_json(tiny_json(), "t5.json"), ModelTask::kSeq2SeqLM));
  ASSERT_TRUE(model);
  const Batch batch = tiny_batch();
  auto gradients = [&](bool checkpointed) {
    model->zero_grad();
    model->gradient_checkpointing_enable(checkpointed);
    torch::manual_seed(9);  // the same dropout masks on both runs
    model->forward(batch).loss.backward();
    std::map<std::string, at::Tensor> grads;
    for (const auto& p : model->named_parameters()) {
      EXPECT_TRUE(p.value().grad().defined()) << p.key() << (checkpointed ? " checkpointed" : "");
      grads[p.key()] = p.value().grad().defined() ? p.value().grad().clone() : at::Tensor();
    }
    return grads;
  };
  const auto plain = gradients(false);
  const auto checkpointed = gradients(true);
  ASSERT_TRUE(plain.count("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"));
  for (const auto& [name, grad] : plain)
    if (grad.defined() && checkpointed.at(name).defined())
      EXPECT_TRUE(at::allclose(checkpointed.at(name), grad, 1e-6, 1e-7)) << name;
}

TEST(T5ForConditionalGeneration, TheHeadIsItsOwnOnlyWhenTheCheckpointHoldsADifferentOne) {
  const fs::path folder = fs::temp_directory_path() / ("t5_head_" + std::to_string(::getpid()));
  torch::manual_seed(5);
  auto model = std::dynamic_pointer_cast<T5ForConditionalGeneration>(AutoModel::from_config(
      *AutoConfig::from_json(tiny_json(), "t5.json"), ModelTask::kSeq2SeqLM));
  EXPECT_FALSE(model->lm_head);  // a new model is tied, as in transformers 5
  save_pretrained(*model, folder.string());
  auto loaded = std::dynamic_pointer_cast<T5ForConditionalGeneration>(
      AutoModel::from_pretrained(folder.string(), ModelTask::kSeq2SeqLM));
  EXPECT_FALSE(loaded->lm_head);
  // A checkpoint with lm_head.weight equal to shared.weight: still tied.
  auto tensors = load_safetensors((folder / "model.safetensors").string()).tensors;
  tensors["lm_head.weight"] = tensors.at("shared.weight").clone();
  save_safetensors((folder / "model.safetensors").string(), tensors, {{"format", "pt"}});
  EXPECT_FALSE(std::dynamic_pointer_cast<T5ForConditionalGeneration>(
                   AutoModel::from_pretrained(folder.string(), ModelTask::kSeq2SeqLM))
                   ->lm_head);
  // A different one (T5 v1.1, FLAN-T5): the head is its own parameter, with those values.
  tensors["lm_head.weight"] = tensors.at("shared.weight") * 2;
  save_safetensors((folder / "model.safetensors").string(), tensors, {{"format", "pt"}});
  auto untied = std::dynamic_pointer_cast<T5ForConditionalGeneration>(
      AutoModel::from_pretrained(folder.string(), ModelTask::kSeq2SeqLM));
  ASSERT_TRUE(untied->lm_head);
  EXPECT_TRUE(untied->lm_head->weight.equal(tensors.at("lm_head.weight")));
  fs::remove_all(folder);
}

TEST(T5ForConditionalGeneration, LabelsWithoutADecoderStartAreRefused) {
  nlohmann::json json = tiny_json();
  json.erase("decoder_start_token_id");
  auto model =
      AutoModel::from_config(*AutoConfig::from_json(json, "t5.json"), ModelTask::kSeq2SeqLM);
  expect_error([&] { model->forward(tiny_batch()); }, {"decoder_start_token_id"});
}

}  // namespace t5_model_test
}  // namespace ctrainer
