// The model registry: config.json's model_type (or architectures) -> the family's config and
// heads, with transformers' Auto semantics; and ModelOutput's named outputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/bert/bert_family.h>
#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/models/registry/model_registry.h>

#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer {
namespace model_registry_test {

namespace fs = std::filesystem;
using testing::expect_error;

nlohmann::json tiny_bert_json() {
  return {{"model_type", "bert"},
          {"vocab_size", 40},
          {"hidden_size", 8},
          {"num_hidden_layers", 1},
          {"num_attention_heads", 2},
          {"intermediate_size", 16},
          {"max_position_embeddings", 16},
          {"hidden_dropout_prob", 0.0},
          {"attention_probs_dropout_prob", 0.0}};
}

Batch tiny_batch() {
  Batch batch;
  batch["input_ids"] = torch::tensor({{2, 5, 7, 3}, {2, 9, 3, 0}}, torch::kLong);
  batch["attention_mask"] = torch::tensor({{1, 1, 1, 1}, {1, 1, 1, 0}}, torch::kLong);
  batch["labels"] = torch::tensor({1, 0}, torch::kLong);
  return batch;
}

TEST(ModelRegistry, AutoConfigPicksTheFamilyByModelType) {
  const auto config = AutoConfig::from_json(tiny_bert_json(), "tiny.json");
  EXPECT_EQ(config->model_type(), "bert");
  EXPECT_EQ(config->vocab_size(), 40);
  EXPECT_EQ(config->max_positions(), 16);
  EXPECT_EQ(bert_config_of(*config).hidden_size, 8);
  EXPECT_EQ(config->to_json().at("hidden_size"), 8);
  EXPECT_EQ(config->num_labels(), 2);  // HF's default
}

TEST(ModelRegistry, WithoutModelTypeTheArchitecturesDecide) {
  nlohmann::json json = tiny_bert_json();
  json.erase("model_type");
  json["architectures"] = {"SomethingElse", "BertForSequenceClassification"};
  EXPECT_EQ(AutoConfig::from_json(json, "tiny.json")->model_type(), "bert");
  json.erase("architectures");
  expect_error([&] { AutoConfig::from_json(json, "tiny.json"); },
               {"tiny.json", "no model_type", "\"model_type\": one of", "bert"});
}

TEST(ModelRegistry, AnUnknownModelTypeListsTheKnownOnes) {
  nlohmann::json json = tiny_bert_json();
  json["model_type"] = "gpt_neo";
  expect_error([&] { AutoConfig::from_json(json, "c.json"); },
               {"c.json", "unknown model_type \"gpt_neo\"", "this build knows: bart, bert"});
  json["model_type"] = 7;
  expect_error([&] { AutoConfig::from_json(json, "c.json"); }, {"c.json", "must be a string"});
  expect_error([&] { AutoConfig::from_json(nlohmann::json::array(), "c.json"); },
               {"c.json", "JSON object"});
}

TEST(ModelRegistry, AutoConfigReadsAFolderOrAFile) {
  const fs::path dir = testing::fresh_output_dir("auto_config");
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << tiny_bert_json().dump();
  EXPECT_EQ(AutoConfig::from_pretrained(dir.string())->model_type(), "bert");
  EXPECT_EQ(AutoConfig::from_pretrained((dir / "config.json").string())->model_type(), "bert");
  expect_error([&] { AutoConfig::from_pretrained((dir / "none").string()); },
               {"cannot read model config", "none"});
  std::ofstream(dir / "broken.json") << "{\"hidden_size\": 8,";
  expect_error([&] { AutoConfig::from_pretrained((dir / "broken.json").string()); },
               {"model config", "broken.json", "is not valid JSON"});
}

TEST(ModelRegistry, AutoModelBuildsTheHeadOfTheTask) {
  const auto config = AutoConfig::from_json(tiny_bert_json(), "tiny.json");
  torch::manual_seed(3);
  const auto model = AutoModel::from_config(*config, ModelTask::kSequenceClassification);
  ASSERT_NE(std::dynamic_pointer_cast<BertForSequenceClassification>(model), nullptr);
  // The same model as the class built directly after the same seed: the factory adds nothing.
  torch::manual_seed(3);
  BertForSequenceClassification direct(bert_config_of(*config));
  model->eval();
  direct.eval();
  const ModelOutput a = model->forward(tiny_batch());
  const ModelOutput b = direct.forward(tiny_batch());
  EXPECT_TRUE(torch::equal(a.logits, b.logits));
  EXPECT_TRUE(torch::equal(a.loss, b.loss));
  expect_error([&] { AutoModel::from_config(*config, ModelTask::kCausalLM); },
               {"model_type \"bert\" has no head for AutoModelForCausalLM",
                "BertForSequenceClassification (AutoModelForSequenceClassification)"});
}

TEST(ModelRegistry, AutoModelFromPretrainedLoadsTheSavedWeights) {
  const auto config = AutoConfig::from_json(tiny_bert_json(), "tiny.json");
  torch::manual_seed(4);
  auto saved = std::dynamic_pointer_cast<BertForSequenceClassification>(
      AutoModel::from_config(*config, ModelTask::kSequenceClassification));
  const fs::path dir = testing::fresh_output_dir("auto_model");
  saved->save_pretrained(dir.string());
  torch::manual_seed(99);  // other draws: only the checkpoint can make the weights equal
  const auto loaded = AutoModel::from_pretrained(dir.string(), ModelTask::kSequenceClassification);
  const auto theirs = loaded->named_parameters();
  for (const auto& p : saved->named_parameters())
    EXPECT_TRUE(torch::equal(p.value(), theirs[p.key()])) << p.key();
}

TEST(ModelRegistry, LabelsAreSetThroughTheInterface) {
  auto config = AutoConfig::from_json(tiny_bert_json(), "tiny.json");
  config->set_label_names({"negative", "neutral", "positive"});
  EXPECT_EQ(config->num_labels(), 3);
  EXPECT_EQ(config->to_json().at("label2id").at("neutral"), 1);
  config->set_num_labels(2);
  EXPECT_EQ(config->id2label(), (std::vector<std::string>{"LABEL_0", "LABEL_1"}));
  config->set_extra("finetuning_task", "sst2");
  EXPECT_EQ(config->to_json().at("finetuning_task"), "sst2");
  const auto copy = config->clone();
  config->set_num_labels(5);
  EXPECT_EQ(copy->num_labels(), 2);
}

TEST(ModelRegistry, AFamilyOfTheProgramsOwnJoinsAndDuplicatesAreRefused) {
  ModelRegistry& registry = ModelRegistry::global();
  ModelFamily family;
  family.model_type = "toy_registry_test";
  family.parse_config = [](const nlohmann::json& json, const std::string& source) {
    nlohmann::json bert = json;
    bert["model_type"] = "bert";  // a toy family that reuses BERT's config
    return std::make_unique<BertModelConfig>(BertConfig::from_json(bert, source));
  };
  registry.add(family);
  const auto types = registry.model_types();
  EXPECT_NE(std::find(types.begin(), types.end(), "toy_registry_test"), types.end());
  nlohmann::json json = tiny_bert_json();
  json["model_type"] = "toy_registry_test";
  EXPECT_EQ(AutoConfig::from_json(json, "toy.json")->to_json().at("hidden_size"), 8);
  EXPECT_THROW(registry.add(family), std::invalid_argument);
  ModelFamily clash;
  clash.model_type = "bert_again";
  clash.parse_config = family.parse_config;
  clash.architectures.push_back({.name = "BertForSequenceClassification"});
  EXPECT_THROW(registry.add(clash), std::invalid_argument);
}

TEST(ModelOutputTest, NamedOutputsBesidesLossAndLogits) {
  ModelOutput out;
  out.logits = torch::zeros({2, 3});
  out.tensors["start_logits"] = torch::ones({2, 5});
  out.tensors["end_logits"] = torch::ones({2, 5}) * 2;
  EXPECT_TRUE(out.contains("logits"));
  EXPECT_FALSE(out.contains("loss"));
  EXPECT_TRUE(out.contains("start_logits"));
  EXPECT_EQ(out.at("end_logits").sum().item<float>(), 20.0f);
  EXPECT_EQ(out.names(), (std::vector<std::string>{"logits", "end_logits", "start_logits"}));
  try {
    out.at("past_key_values");
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("it has: logits, end_logits, start_logits"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace model_registry_test
}  // namespace ctrainer
