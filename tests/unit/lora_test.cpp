// LoRA on the registered families: what attach_lora adapts and freezes (PEFT's matching rules),
// the adapted forward against its closed form, merge_lora and save_merged_lora_model against
// the adapted forward, the adapter file's keys and its round trip, and adapter_config.json's
// reading. Agreement with PEFT itself: parity.lora_vs_peft.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/lora/lora_model.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/registry/model_registry.h>

#include "support/test_data.h"

namespace ctrainer {
namespace lora_test {

namespace fs = std::filesystem;

std::shared_ptr<Model> tiny(const std::string& model_type, ModelTask task) {
  nlohmann::json json;
  if (model_type == "gpt2")
    json = {{"model_type", "gpt2"}, {"vocab_size", 50},  {"n_embd", 16},
            {"n_layer", 2},         {"n_head", 2},       {"n_positions", 16},
            {"resid_pdrop", 0.0},   {"embd_pdrop", 0.0}, {"attn_pdrop", 0.0}};
  else if (model_type == "llama")
    json = {{"model_type", "llama"},    {"vocab_size", 50},
            {"hidden_size", 16},        {"intermediate_size", 24},
            {"num_hidden_layers", 2},   {"num_attention_heads", 4},
            {"num_key_value_heads", 2}, {"max_position_embeddings", 16}};
  else
    json = {{"model_type", "bert"},
            {"vocab_size", 50},
            {"hidden_size", 16},
            {"num_hidden_layers", 2},
            {"num_attention_heads", 2},
            {"intermediate_size", 24},
            {"max_position_embeddings", 16},
            {"hidden_dropout_prob", 0.0},
            {"attention_probs_dropout_prob", 0.0}};
  torch::manual_seed(3);
  auto model = AutoModel::from_config(*AutoConfig::from_json(json, "test config"), task);
  model->eval();
  return model;
}

Batch batch_of(ModelTask task) {
  Batch batch;
  batch.set("input_ids", torch::randint(3, 50, {2, 7}, torch::kLong));
  if (task == ModelTask::kSequenceClassification)
    batch.set("labels", torch::tensor({0, 1}, torch::kLong));
  else
    batch.set("labels", batch.at("input_ids").clone());
  return batch;
}

LoraConfig lora(std::vector<std::string> targets, int64_t r = 4, double alpha = 8) {
  LoraConfig config;
  config.r = r;
  config.lora_alpha = alpha;
  config.target_modules = std::move(targets);
  return config;
}

void randomize_adapters(Model& model) {
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters())
    if (item.key().find(".lora_") != std::string::npos) item.value().normal_(0.0, 0.2);
}

class Lora : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::fresh_output_dir("lora_unit"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(Lora, AFreshAdapterLeavesTheModelUnchangedAndOnlyItTrains) {
  for (const std::string type : {"bert", "gpt2", "llama"}) {
    const ModelTask task =
        type == "bert" ? ModelTask::kSequenceClassification : ModelTask::kCausalLM;
    auto model = tiny(type, task);
    const Batch batch = batch_of(task);
    const at::Tensor before = model->forward(batch).logits.detach();
    LoraConfig config;  // PEFT's default targets of the model type
    config.task_type = type == "bert" ? "SEQ_CLS" : "CAUSAL_LM";
    const LoraAttachment attached = attach_lora(*model, config);
    EXPECT_TRUE(torch::equal(model->forward(batch).logits, before)) << type;
    // bert: query, value; gpt2: c_attn; llama: q_proj, v_proj (two layers each).
    EXPECT_EQ(attached.adapted_modules.size(), type == "gpt2" ? 2u : 4u) << type;
    for (const auto& item : model->named_parameters()) {
      const bool adapter = item.key().find(".lora_") != std::string::npos;
      const bool classifier = item.key().starts_with("classifier.");
      EXPECT_EQ(item.value().requires_grad(), adapter || classifier) << item.key();
    }
    EXPECT_EQ(attached.saved_modules,
              type == "bert" ? std::vector<std::string>{"classifier"} : std::vector<std::string>{});
  }
}

TEST_F(Lora, TheAdaptedForwardIsTheClosedForm) {
  auto model = tiny("llama", ModelTask::kCausalLM);
  LoraConfig config = lora({"q_proj"}, 2, 6);
  config.use_rslora = true;  // scaling 6 / sqrt(2)
  attach_lora(*model, config);
  randomize_adapters(*model);
  auto params = model->named_parameters();
  const at::Tensor x = torch::randn({3, 16});
  const at::Tensor a = params["model.layers.0.self_attn.q_proj.lora_A.weight"];
  const at::Tensor b = params["model.layers.0.self_attn.q_proj.lora_B.weight"];
  const at::Tensor w = params["model.layers.0.self_attn.q_proj.weight"];
  auto q_proj = model->named_modules()["model.layers.0.self_attn.q_proj"];
  const at::Tensor expected =
      at::matmul(x, w.t()) + at::matmul(at::matmul(x, a.t()), b.t()) * (6.0 / std::sqrt(2.0));
  const at::Tensor got = q_proj->as<AdaptableLinear>()->forward(x);
  EXPECT_TRUE(torch::allclose(got, expected, 1e-5, 1e-6));
}

TEST_F(Lora, AllLinearSkipsTheOutputLayerAndTheClassifier) {
  auto lm = tiny("gpt2", ModelTask::kCausalLM);
  LoraConfig config;
  config.all_linear = true;
  const LoraAttachment attached = attach_lora(*lm, config);
  EXPECT_EQ(attached.adapted_modules.size(), 8u);  // c_attn, c_proj, c_fc, mlp.c_proj x 2
  for (const std::string& path : attached.adapted_modules)
    EXPECT_TRUE(path.starts_with("transformer.h.")) << path;
  // The saved config names them, as PEFT resolves "all-linear".
  EXPECT_EQ(attached_lora_config(*lm)->target_modules, attached.adapted_modules);

  auto classifier = tiny("bert", ModelTask::kSequenceClassification);
  config.task_type = "SEQ_CLS";
  const LoraAttachment bert = attach_lora(*classifier, config);
  // q, k, v, attention.output.dense, intermediate.dense, output.dense x 2, and the pooler.
  EXPECT_EQ(bert.adapted_modules.size(), 13u);
  for (const std::string& path : bert.adapted_modules) EXPECT_NE(path, "classifier");
}

TEST_F(Lora, ExcludeRegexAndErrorsFollowPeft) {
  auto model = tiny("bert", ModelTask::kMaskedLM);
  LoraConfig config = lora({"dense"});
  config.exclude_modules = {"attention.output.dense"};
  const LoraAttachment attached = attach_lora(*model, config);
  // intermediate.dense and output.dense of each layer, the pooler-less MLM head's transform.
  for (const std::string& path : attached.adapted_modules)
    EXPECT_EQ(path.find("attention.output"), std::string::npos) << path;
  EXPECT_EQ(attached.adapted_modules.size(), 5u);
  EXPECT_THROW(attach_lora(*model, config), ArgumentError);  // twice

  auto llama = tiny("llama", ModelTask::kCausalLM);
  LoraConfig regex;
  regex.target_regex = R"(.*\.layers\.1\..*_proj)";
  EXPECT_EQ(attach_lora(*llama, regex).adapted_modules.size(), 7u);

  auto gpt2 = tiny("gpt2", ModelTask::kCausalLM);
  EXPECT_THROW(attach_lora(*gpt2, lora({"q_proj"})), ArgumentError);  // nothing matches
  EXPECT_THROW(attach_lora(*gpt2, lora({"ln_1"})), ArgumentError);    // not a projection
}

TEST_F(Lora, MergingGivesTheAdaptedLogits) {
  for (const std::string type : {"gpt2", "llama"}) {
    auto model = tiny(type, ModelTask::kCausalLM);
    LoraConfig config;
    config.all_linear = true;
    config.task_type = "CAUSAL_LM";
    attach_lora(*model, config);
    randomize_adapters(*model);
    const Batch batch = batch_of(ModelTask::kCausalLM);
    const at::Tensor adapted = model->forward(batch).logits.detach();
    save_lora_adapter(*model, (dir_ / type).string());
    save_merged_lora_model(*model, (dir_ / type).string(), (dir_ / (type + "-merged")).string());
    auto reloaded =
        AutoModel::from_pretrained((dir_ / (type + "-merged")).string(), ModelTask::kCausalLM);
    reloaded->eval();
    EXPECT_TRUE(torch::allclose(reloaded->forward(batch).logits, adapted, 1e-4, 1e-5)) << type;

    merge_lora(*model);  // in place: the adapters are gone, the logits stay
    EXPECT_FALSE(attached_lora_config(*model));
    for (const auto& item : model->named_parameters())
      EXPECT_EQ(item.key().find("lora"), std::string::npos) << item.key();
    EXPECT_TRUE(torch::allclose(model->forward(batch).logits, adapted, 1e-4, 1e-5)) << type;
  }
}

TEST_F(Lora, GradientCheckpointingGivesTheAdapterTheSameGradients) {
  // The frozen embeddings' output needs no gradient: the checkpointed blocks must still pass
  // the adapters' gradients through (their tensors are inputs of the recorded node).
  std::map<std::string, at::Tensor> grads[2];
  const Batch batch = batch_of(ModelTask::kCausalLM);
  for (int checkpointed = 0; checkpointed < 2; ++checkpointed) {
    auto model = tiny("gpt2", ModelTask::kCausalLM);
    LoraConfig config;
    config.all_linear = true;
    attach_lora(*model, config);
    torch::manual_seed(11);
    randomize_adapters(*model);
    model->train();  // dropout is 0 in tiny(); checkpointing applies in training only
    model->gradient_checkpointing_enable(checkpointed == 1);
    model->forward(batch).loss.backward();
    for (const auto& item : model->named_parameters())
      if (item.value().requires_grad()) {
        ASSERT_TRUE(item.value().grad().defined())
            << item.key() << " checkpointed " << checkpointed;
        grads[checkpointed][item.key()] = item.value().grad().clone();
      }
  }
  ASSERT_EQ(grads[0].size(), 16u);
  for (const auto& [key, grad] : grads[0])
    EXPECT_TRUE(torch::allclose(grads[1].at(key), grad, 1e-5, 1e-7)) << key;
}

TEST_F(Lora, TheAdapterFolderRoundTrips) {
  auto model = tiny("bert", ModelTask::kSequenceClassification);
  LoraConfig config = lora({"query", "value"});
  config.task_type = "SEQ_CLS";
  attach_lora(*model, config);
  randomize_adapters(*model);
  save_pretrained(*model, dir_.string());  // a model with adapters saves as PEFT does
  EXPECT_FALSE(fs::exists(dir_ / "model.safetensors"));
  const auto file = load_safetensors((dir_ / kLoraAdapterWeightsFile).string());
  std::set<std::string> keys;
  for (const auto& [key, tensor] : file.tensors) keys.insert(key);
  EXPECT_EQ(keys.size(), 10u);  // 4 projections x (A, B) + classifier weight and bias
  EXPECT_TRUE(
      keys.count("base_model.model.bert.encoder.layer.1.attention.self.value.lora_B.weight"));
  EXPECT_TRUE(keys.count("base_model.model.classifier.bias"));
  const LoraConfig saved = LoraConfig::from_file(dir_.string());
  EXPECT_EQ(saved.modules_to_save, (std::vector<std::string>{"classifier", "score"}));
  EXPECT_EQ(saved.target_modules, (std::vector<std::string>{"query", "value"}));

  auto other = tiny("bert", ModelTask::kSequenceClassification);
  attach_lora(*other, saved);
  load_pretrained_weights(*other, dir_.string(), {});  // the resume path: an adapter folder
  const Batch batch = batch_of(ModelTask::kSequenceClassification);
  EXPECT_TRUE(torch::equal(other->forward(batch).logits, model->forward(batch).logits));

  auto wrong = tiny("bert", ModelTask::kSequenceClassification);
  attach_lora(*wrong, lora({"query"}));
  EXPECT_THROW(load_lora_adapter(*wrong, dir_.string()), ArgumentError);
  auto bare = tiny("bert", ModelTask::kSequenceClassification);
  EXPECT_THROW(load_pretrained_weights(*bare, dir_.string(), {}), ArgumentError);
}

TEST(LoraConfigJson, ReadsWhatPeftWritesAndRefusesWhatItCannotHonour) {
  const nlohmann::json peft = {{"peft_type", "LORA"},
                               {"task_type", "CAUSAL_LM"},
                               {"r", 16},
                               {"lora_alpha", 32},
                               {"lora_dropout", 0.05},
                               {"target_modules", "all-linear"},
                               {"use_dora", false},
                               {"rank_pattern", nlohmann::json::object()},
                               {"layers_to_transform", nullptr},
                               {"peft_version", "0.21.2"},
                               {"bias", "none"}};
  const LoraConfig config = LoraConfig::from_json(peft, "a.json");
  EXPECT_EQ(config.r, 16);
  EXPECT_DOUBLE_EQ(config.scaling(), 2.0);
  EXPECT_TRUE(config.all_linear);
  EXPECT_EQ(LoraConfig::from_json(config.to_json(), "b").to_json(), config.to_json());

  auto refused = [&](const char* key, nlohmann::json value) {
    nlohmann::json bad = peft;
    bad[key] = std::move(value);
    try {
      LoraConfig::from_json(bad, "a.json");
    } catch (const ArgumentError& e) {
      return std::string(e.what()).find(key) != std::string::npos &&
             std::string(e.what()).find("a.json") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(refused("peft_type", "IA3"));
  EXPECT_TRUE(refused("use_dora", true));
  EXPECT_TRUE(refused("rank_pattern", {{"q_proj", 4}}));
  EXPECT_TRUE(refused("bias", "all"));
  EXPECT_TRUE(refused("r", 0));
  EXPECT_TRUE(refused("lora_dropout", 1.0));
  EXPECT_TRUE(refused("init_lora_weights", "pissa"));
  EXPECT_TRUE(refused("lora_alpha", "big"));
  EXPECT_TRUE(refused("surprise_key", 3));
}

}  // namespace lora_test
}  // namespace ctrainer
