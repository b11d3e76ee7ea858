// Tests of BertForSequenceClassification: logits, pooled output and the three losses against
// golden values of an independent PyTorch implementation (tests/reference/bert_reference.py,
// data in tests/data/bert_tiny), HF state-dict names, loading rules (prefix, missing, unexpected,
// mismatched keys), save/load round trips, config.json handling, HF initialisation, and
// gradient checkpointing giving the gradients of the plain path.
#include <ctrainer/models/bert/bert_for_sequence_classification.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/torch_compat.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/pretrained_weights.h>

#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer {
namespace bert_model_test {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr double kTolerance = 1e-5;

fs::path tiny_dir() {
  // CTRAINER_EXAMPLES_DATA_DIR is <repo>/examples/data.
  return fs::path(CTRAINER_EXAMPLES_DATA_DIR).parent_path().parent_path() / "tests" / "data" /
         "bert_tiny";
}

const json& reference() {
  static const json value = [] {
    std::ifstream in(tiny_dir() / "reference.json");
    return json::parse(in);
  }();
  return value;
}

at::Tensor tensor_of(const json& j, at::ScalarType dtype) {
  std::vector<double> flat;
  std::vector<int64_t> shape;
  if (j.at(0).is_array()) {
    shape = {static_cast<int64_t>(j.size()), static_cast<int64_t>(j.at(0).size())};
    for (const auto& row : j)
      for (const auto& v : row) flat.push_back(v.get<double>());
  } else {
    shape = {static_cast<int64_t>(j.size())};
    for (const auto& v : j) flat.push_back(v.get<double>());
  }
  return at::tensor(flat, at::kDouble).view(shape).to(dtype);
}

Batch reference_inputs() {
  const json& r = reference();
  Batch batch;
  batch.set("input_ids", tensor_of(r["input_ids"], at::kLong));
  batch.set("token_type_ids", tensor_of(r["token_type_ids"], at::kLong));
  batch.set("attention_mask", tensor_of(r["attention_mask"], at::kLong));
  return batch;
}

void expect_close(const at::Tensor& actual, const at::Tensor& expected, double tol = kTolerance) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  const double diff =
      (actual.to(at::kDouble) - expected.to(at::kDouble)).abs().max().item<double>();
  EXPECT_LE(diff, tol) << "actual\n" << actual << "\nexpected\n" << expected;
}

std::shared_ptr<BertForSequenceClassification> tiny_model(
    const BertFromPretrainedOptions& options = {}) {
  auto model = BertForSequenceClassification::from_pretrained(tiny_dir().string(), options);
  model->eval();
  return model;
}

class BertModelTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::fresh_output_dir("bert"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// ---- golden values ---------------------------------------------------------------------------

TEST_F(BertModelTest, LogitsAndPooledOutputMatchTheReference) {
  auto model = tiny_model();
  torch::NoGradGuard no_grad;
  Batch batch = reference_inputs();
  ModelOutput out = model->forward(batch);
  EXPECT_FALSE(out.loss.defined());  // no labels, no loss
  expect_close(out.logits, tensor_of(reference()["logits"]["gelu"], at::kDouble));
  expect_close(model->pooled_output(batch), tensor_of(reference()["pooled_output"], at::kDouble));
}

// run_glue --full_last_layer: every row of the last layer computed, as transformers does. The
// reference logits still match, and loss and every gradient equal the [CLS]-only default's.
TEST_F(BertModelTest, TheFullLastLayerGivesTheSameLogitsLossAndGradients) {
  auto model = tiny_model();
  EXPECT_FALSE(model->full_last_layer());
  Batch batch = reference_inputs();
  batch.set("labels", at::zeros({batch.at("input_ids").size(0)}, at::kLong));
  const auto loss_and_gradients = [&] {
    model->zero_grad();
    ModelOutput out = model->forward(batch);
    out.loss.backward();
    std::vector<at::Tensor> gradients;
    for (const at::Tensor& p : model->parameters()) gradients.push_back(p.grad().clone());
    return std::make_pair(out, gradients);
  };
  const auto [cls_only, cls_only_gradients] = loss_and_gradients();
  model->set_full_last_layer(true);
  const auto [full, full_gradients] = loss_and_gradients();
  expect_close(full.logits, tensor_of(reference()["logits"]["gelu"], at::kDouble));
  expect_close(full.logits, cls_only.logits, 1e-6);
  expect_close(full.loss, cls_only.loss, 1e-6);
  ASSERT_EQ(full_gradients.size(), cls_only_gradients.size());
  for (size_t i = 0; i < full_gradients.size(); ++i)
    expect_close(full_gradients[i], cls_only_gradients[i], 1e-6);
}

TEST_F(BertModelTest, EveryHiddenActivationMatchesTheReference) {
  for (const std::string act : {"gelu", "gelu_new", "relu"}) {
    BertConfig config = BertConfig::from_json_file((tiny_dir() / "config.json").string());
    config.hidden_act = act;
    BertForSequenceClassification model(config);
    load_pretrained_weights(model, tiny_dir().string(),
                            BertForSequenceClassification::weight_load_options());
    model.eval();
    torch::NoGradGuard no_grad;
    SCOPED_TRACE(act);
    expect_close(model.forward(reference_inputs()).logits,
                 tensor_of(reference()["logits"][act], at::kDouble));
  }
}

TEST_F(BertModelTest, PaddedPositionsDoNotChangeTheResult) {
  auto model = tiny_model();
  torch::NoGradGuard no_grad;
  Batch batch = reference_inputs();
  at::Tensor expected = model->forward(batch).logits;
  batch.set("input_ids", tensor_of(reference()["input_ids_other_padding"], at::kLong));
  // Different ids under mask 0 must be invisible to the unpadded positions' [CLS].
  expect_close(model->forward(batch).logits, expected, 1e-6);
}

TEST_F(BertModelTest, TheThreeLossesMatchTheReference) {
  const json& labels = reference()["labels"];
  const json& loss = reference()["loss"];
  {
    auto model = tiny_model();  // problem_type null + integer labels -> single-label
    Batch batch = reference_inputs();
    batch.set("labels", tensor_of(labels["single_label_classification"], at::kLong));
    EXPECT_NEAR(model->forward(batch).loss.item<double>(),
                loss["single_label_classification"].get<double>(), kTolerance);
    EXPECT_EQ(model->bert_config().problem_type, "single_label_classification");  // as HF
  }
  {
    auto model = tiny_model();  // float labels [B, num_labels] -> multi-label
    Batch batch = reference_inputs();
    batch.set("labels", tensor_of(labels["multi_label_classification"], at::kFloat));
    EXPECT_NEAR(model->forward(batch).loss.item<double>(),
                loss["multi_label_classification"].get<double>(), kTolerance);
    EXPECT_EQ(model->bert_config().problem_type, "multi_label_classification");
  }
  {
    BertFromPretrainedOptions options;
    options.problem_type = "regression";
    auto model = tiny_model(options);
    Batch batch = reference_inputs();
    batch.set("labels", tensor_of(labels["regression"], at::kFloat));
    EXPECT_NEAR(model->forward(batch).loss.item<double>(), loss["regression"].get<double>(),
                kTolerance);
  }
}

TEST_F(BertModelTest, OneLabelMeansRegressionOnSqueezedLogits) {
  BertConfig config;
  config.vocab_size = 50;
  config.hidden_size = 16;
  config.num_hidden_layers = 1;
  config.num_attention_heads = 2;
  config.intermediate_size = 20;
  config.set_num_labels(1);
  at::manual_seed(3);
  BertForSequenceClassification model(config);
  model.eval();
  Batch batch{{"input_ids", at::randint(1, 50, {4, 6}, at::kLong)},
              {"labels", at::tensor({0.5, 1.0, -2.0, 3.0}, at::kFloat)}};
  ModelOutput out = model.forward(batch);
  ASSERT_EQ(out.logits.sizes(), (std::vector<int64_t>{4, 1}));
  const double expected = (out.logits.squeeze(1) - batch.at("labels")).pow(2).mean().item<double>();
  EXPECT_NEAR(out.loss.item<double>(), expected, 1e-6);
  EXPECT_EQ(model.bert_config().problem_type, "regression");
}

TEST_F(BertModelTest, FloatLabelsForSingleLabelClassificationAreRejected) {
  BertFromPretrainedOptions options;
  options.problem_type = "single_label_classification";
  auto model = tiny_model(options);
  Batch batch = reference_inputs();
  batch.set("labels", at::zeros({3}, at::kFloat));
  testing::expect_error([&] { model->forward(batch); }, {"single_label_classification"});
}

// ---- names and loading -----------------------------------------------------------------------

TEST_F(BertModelTest, StateDictKeysAndShapesAreHuggingFaces) {
  auto model = tiny_model();
  std::vector<std::pair<std::string, std::vector<int64_t>>> ours;
  for (const auto& p : model->named_parameters())
    ours.emplace_back(p.key(), p.value().sizes().vec());
  EXPECT_TRUE(model->named_buffers().is_empty());  // HF's buffers are non-persistent
  std::vector<std::pair<std::string, std::vector<int64_t>>> hf;
  for (const auto& entry : reference()["state_dict_keys"])
    hf.emplace_back(entry[0].get<std::string>(), entry[1].get<std::vector<int64_t>>());
  EXPECT_EQ(ours, hf);  // same names, shapes and order as transformers' state_dict()
}

TEST_F(BertModelTest, FullCheckpointLoadsWithoutWarnings) {
  BertConfig config = BertConfig::from_json_file((tiny_dir() / "config.json").string());
  BertForSequenceClassification model(config);
  auto options = BertForSequenceClassification::weight_load_options();
  WeightLoadReport report = load_pretrained_weights(model, tiny_dir().string(), options);
  EXPECT_TRUE(report.missing_keys.empty());
  EXPECT_TRUE(report.unexpected_keys.empty());
  EXPECT_TRUE(weight_load_warnings(report, options, "x").empty());
}

TEST_F(BertModelTest, SavePretrainedThenFromPretrainedGivesIdenticalLogits) {
  auto model = tiny_model();
  model->save_pretrained(dir_.string());
  auto reloaded = BertForSequenceClassification::from_pretrained(dir_.string());
  reloaded->eval();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(at::equal(model->forward(reference_inputs()).logits,
                        reloaded->forward(reference_inputs()).logits));
  // The file holds exactly HF's keys, nothing else.
  SafetensorsHeader header = read_safetensors_header((dir_ / "model.safetensors").string());
  EXPECT_EQ(header.tensors.size(), reference()["state_dict_keys"].size());
  EXPECT_EQ(header.metadata.at("format"), "pt");
}

TEST_F(BertModelTest, BareBertModelCheckpointLeavesANewClassifierWithAWarning) {
  // A BertModel checkpoint: keys without "bert.", no classifier (HF base_model_prefix).
  SafetensorsFile full = load_safetensors((tiny_dir() / "model.safetensors").string());
  std::map<std::string, at::Tensor> bare;
  for (const auto& [key, value] : full.tensors)
    if (key.rfind("bert.", 0) == 0) bare[key.substr(5)] = value;
  bare["embeddings.position_ids"] = at::arange(40, at::kLong).unsqueeze(0);  // old HF buffer
  fs::create_directories(dir_);
  save_safetensors((dir_ / "model.safetensors").string(), bare);
  fs::copy_file(tiny_dir() / "config.json", dir_ / "config.json");

  BertConfig config = BertConfig::from_json_file((dir_ / "config.json").string());
  BertForSequenceClassification model(config);
  auto options = BertForSequenceClassification::weight_load_options();
  at::manual_seed(11);
  WeightLoadReport report = load_pretrained_weights(model, dir_.string(), options);
  EXPECT_EQ(report.missing_keys,
            (std::vector<std::string>{"classifier.bias", "classifier.weight"}));
  EXPECT_TRUE(report.unexpected_keys.empty());  // position_ids is ignored silently, as in HF
  auto warnings = weight_load_warnings(report, options, dir_.string());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("Some weights of BertForSequenceClassification were not "
                                     "initialized from the model checkpoint at " +
                                     dir_.string() +
                                     " and are newly initialized: "
                                     "['classifier.bias', 'classifier.weight']"));
  // The encoder came from the checkpoint: the pooled output is the reference one.
  model.eval();
  torch::NoGradGuard no_grad;
  expect_close(model.pooled_output(reference_inputs()),
               tensor_of(reference()["pooled_output"], at::kDouble));
  // The head keeps HF's initialisation: zero bias, N(0, 0.02) weights.
  EXPECT_TRUE(at::equal(model.classifier->bias, at::zeros({3})));
  const double std = model.classifier->weight.std().item<double>();
  EXPECT_GT(std, 0.01);
  EXPECT_LT(std, 0.03);
}

TEST_F(BertModelTest, PreTrainingHeadsAreUnexpectedAndReported) {
  SafetensorsFile full = load_safetensors((tiny_dir() / "model.safetensors").string());
  auto tensors = full.tensors;
  tensors["cls.predictions.bias"] = at::zeros({64});
  tensors["cls.seq_relationship.weight"] = at::zeros({2, 32});
  tensors["bert.embeddings.position_ids"] = at::arange(40, at::kLong).unsqueeze(0);
  BertConfig config = BertConfig::from_json_file((tiny_dir() / "config.json").string());
  BertForSequenceClassification model(config);
  auto options = BertForSequenceClassification::weight_load_options();
  WeightLoadReport report = load_state_dict(model, tensors, options, "ckpt");
  EXPECT_EQ(report.unexpected_keys,
            (std::vector<std::string>{"cls.predictions.bias", "cls.seq_relationship.weight"}));
  EXPECT_TRUE(report.missing_keys.empty());
  auto warnings = weight_load_warnings(report, options, "ckpt");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("Some weights of the model checkpoint at ckpt were not used "
                                     "when initializing BertForSequenceClassification: "
                                     "['cls.predictions.bias', 'cls.seq_relationship.weight']"));
}

TEST_F(BertModelTest, HeadCheckpointLoadsIntoTheBareModel) {
  SafetensorsFile full = load_safetensors((tiny_dir() / "model.safetensors").string());
  BertConfig config = BertConfig::from_json_file((tiny_dir() / "config.json").string());
  BertModel bare(config);
  WeightLoadOptions options;
  options.model_class = "BertModel";
  options.base_model_prefix = "bert";
  WeightLoadReport report = load_state_dict(*bare, full.tensors, options, "ckpt");
  EXPECT_TRUE(report.missing_keys.empty());
  EXPECT_EQ(report.unexpected_keys,
            (std::vector<std::string>{"classifier.bias", "classifier.weight"}));
  EXPECT_TRUE(at::equal(bare->pooler->dense->weight, full.tensors.at("bert.pooler.dense.weight")));
}

TEST_F(BertModelTest, LegacyLayerNormGammaBetaNamesLoad) {
  SafetensorsFile full = load_safetensors((tiny_dir() / "model.safetensors").string());
  std::map<std::string, at::Tensor> legacy;
  for (const auto& [key, value] : full.tensors) {
    std::string k = key;
    if (k.size() > 16 && k.find("LayerNorm.weight") != std::string::npos)
      k.replace(k.find("LayerNorm.weight"), 16, "LayerNorm.gamma");
    else if (k.find("LayerNorm.bias") != std::string::npos)
      k.replace(k.find("LayerNorm.bias"), 14, "LayerNorm.beta");
    legacy[k] = value;
  }
  BertConfig config = BertConfig::from_json_file((tiny_dir() / "config.json").string());
  BertForSequenceClassification model(config);
  WeightLoadReport report = load_state_dict(
      model, legacy, BertForSequenceClassification::weight_load_options(), "legacy");
  EXPECT_TRUE(report.missing_keys.empty());
  EXPECT_TRUE(report.unexpected_keys.empty());
}

TEST_F(BertModelTest, ShapeMismatchNamesTheKeyAndBothShapes) {
  BertFromPretrainedOptions options;
  options.num_labels = 2;
  testing::expect_error(
      [&] { BertForSequenceClassification::from_pretrained(tiny_dir().string(), options); },
      {"size mismatch for classifier.weight", "shape [3, 32] from checkpoint",
       "the shape in current model is [2, 32]", "classifier.bias", "[3]", "[2]",
       tiny_dir().string()});
  // HF's ignore_mismatched_sizes: re-initialised and reported instead.
  options.ignore_mismatched_sizes = true;
  auto model = BertForSequenceClassification::from_pretrained(tiny_dir().string(), options);
  EXPECT_EQ(model->classifier->weight.sizes(), (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(model->bert_config().id2label, (std::vector<std::string>{"LABEL_0", "LABEL_1"}));
}

TEST_F(BertModelTest, MissingWeightsFileIsAClearError) {
  fs::create_directories(dir_);
  fs::copy_file(tiny_dir() / "config.json", dir_ / "config.json");
  std::ofstream(dir_ / "pytorch_model.bin") << "pickle";
  testing::expect_error([&] { BertForSequenceClassification::from_pretrained(dir_.string()); },
                        {dir_.string(), "pytorch_model.bin", "model.safetensors"});
  testing::expect_error(
      [&] { BertForSequenceClassification::from_pretrained((dir_ / "nope").string()); },
      {"nope", "does not exist"});
}

// ---- config.json -----------------------------------------------------------------------------

TEST_F(BertModelTest, ConfigRoundTripKeepsUnknownKeysAndLabels) {
  const std::string path = (tiny_dir() / "config.json").string();
  BertConfig config = BertConfig::from_json_file(path);
  EXPECT_EQ(config.num_labels(), 3);
  EXPECT_EQ(config.id2label[2], "positive");
  EXPECT_EQ(config.intermediate_size, 37);
  EXPECT_FALSE(config.classifier_dropout.has_value());
  fs::create_directories(dir_);
  const std::string out = (dir_ / "config.json").string();
  config.save(out);
  json original, saved;
  std::ifstream(path) >> original;
  std::ifstream(out) >> saved;
  EXPECT_EQ(saved, original);  // every key, the unknown ones (use_cache, ...) included
  EXPECT_EQ(BertConfig::from_json_file(out).to_json(), config.to_json());
}

TEST_F(BertModelTest, ConfigNumLabelsWithoutId2LabelAndTheSetter) {
  BertConfig c = BertConfig::from_json(json{{"num_labels", 4}});
  EXPECT_EQ(c.num_labels(), 4);
  EXPECT_EQ(c.id2label[3], "LABEL_3");
  EXPECT_EQ(c.label2id.at("LABEL_3"), 3);
  EXPECT_EQ(c.to_json()["id2label"],
            (json{{"0", "LABEL_0"}, {"1", "LABEL_1"}, {"2", "LABEL_2"}, {"3", "LABEL_3"}}));
  EXPECT_EQ(BertConfig().num_labels(), 2);  // HF's default
  // A count from a file that would name billions of labels is an error, not an exhausted memory
  // (fuzz/corpus/bert_config/num_labels_huge.json).
  testing::expect_error(
      [] {
        BertConfig::from_json(json{{"num_labels", int64_t{1} << 62}}, "cfg.json");
      },
      {"cfg.json", "'num_labels' must be in [1, 1000000]"});
  testing::expect_error([] { BertConfig().set_num_labels(BertConfig::kMaxNumLabels + 1); },
                        {"num_labels 1000001"});
}

TEST_F(BertModelTest, BadConfigIsAClearErrorNamingTheFile) {
  fs::create_directories(dir_);
  const std::string path = (dir_ / "config.json").string();
  auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  write("{ not json");
  testing::expect_error([&] { BertConfig::from_json_file(path); }, {path, "not valid JSON"});
  write(R"({"hidden_size": "big"})");
  testing::expect_error([&] { BertConfig::from_json_file(path); },
                        {path, "'hidden_size' must be an integer", "\"big\""});
  write(R"({"hidden_size": 30, "num_attention_heads": 4})");
  testing::expect_error(
      [&] { BertConfig::from_json_file(path); },
      {path, "'hidden_size' (30) must be a multiple of 'num_attention_heads' (4)"});
  write(R"({"hidden_act": "swish"})");
  testing::expect_error([&] { BertConfig::from_json_file(path); }, {path, "swish"});
  write(R"({"model_type": "gpt2"})");
  testing::expect_error([&] { BertConfig::from_json_file(path); }, {path, "gpt2"});
  write(R"({"id2label": {"0": "a", "2": "c"}})");
  testing::expect_error([&] { BertConfig::from_json_file(path); }, {path, "id2label", "1"});
  testing::expect_error([&] { BertConfig::from_json_file((dir_ / "absent.json").string()); },
                        {"absent.json"});
}

// ---- initialisation, inputs, flops -----------------------------------------------------------

TEST_F(BertModelTest, InitialisationFollowsHuggingFace) {
  BertConfig config;
  config.vocab_size = 300;
  config.hidden_size = 64;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.intermediate_size = 128;
  config.initializer_range = 0.05;
  at::manual_seed(0);
  BertForSequenceClassification model(config);
  for (const auto& p : model.named_parameters()) {
    const std::string& name = p.key();
    SCOPED_TRACE(name);
    if (name.find("LayerNorm.weight") != std::string::npos) {
      EXPECT_TRUE(at::equal(p.value(), at::ones_like(p.value())));
    } else if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
      EXPECT_TRUE(at::equal(p.value(), at::zeros_like(p.value())));
    } else {
      EXPECT_NEAR(p.value().std().item<double>(), 0.05, 0.01);
      EXPECT_NEAR(p.value().mean().item<double>(), 0.0, 0.01);
    }
  }
  // The padding row (pad_token_id 0) starts at zero.
  EXPECT_TRUE(at::equal(model.bert->embeddings->word_embeddings->weight[0], at::zeros({64})));
}

TEST_F(BertModelTest, DefaultsForOptionalInputs) {
  auto model = tiny_model();
  torch::NoGradGuard no_grad;
  Batch full = reference_inputs();
  Batch plain{{"input_ids", full.at("input_ids")}};
  Batch explicit_defaults{{"input_ids", full.at("input_ids")},
                          {"attention_mask", at::ones_like(full.at("input_ids"))},
                          {"token_type_ids", at::zeros_like(full.at("input_ids"))}};
  expect_close(model->forward(plain).logits, model->forward(explicit_defaults).logits, 1e-6);
}

TEST_F(BertModelTest, TooLongInputIsAClearError) {
  auto model = tiny_model();
  Batch batch{{"input_ids", at::ones({1, 41}, at::kLong)}};
  testing::expect_error([&] { model->forward(batch); }, {"41", "max_position_embeddings = 40"});
}

TEST_F(BertModelTest, FloatingPointOpsAreSixTimesTokensTimesNonEmbeddingParameters) {
  auto model = tiny_model();
  Batch batch = reference_inputs();
  int64_t non_embedding = 0;
  for (const auto& p : model->named_parameters())
    if (p.key().find("_embeddings.") == std::string::npos) non_embedding += p.value().numel();
  EXPECT_DOUBLE_EQ(model->floating_point_ops(batch), 6.0 * 21 * non_embedding);
}

// ---- gradient checkpointing ------------------------------------------------------------------

/// Number of autograd nodes reachable from `t` whose name contains `needle`.
int count_graph_nodes(const at::Tensor& t, const std::string& needle) {
  std::vector<torch::autograd::Node*> stack{t.grad_fn().get()};
  std::set<torch::autograd::Node*> seen;
  int count = 0;
  while (!stack.empty()) {
    torch::autograd::Node* node = stack.back();
    stack.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    if (node->name().find(needle) != std::string::npos) ++count;
    for (const auto& edge : node->next_edges()) stack.push_back(edge.function.get());
  }
  return count;
}

struct StepResult {
  int checkpointed_blocks = 0;  // CheckpointFunction nodes in the graph
  at::Tensor loss;
  std::map<std::string, at::Tensor> grads;
  at::Tensor next_random;  // what the global generator gives after the step
};

StepResult train_step(bool checkpointing, bool freeze_embeddings = false,
                      bool autocast_bf16 = false) {
  BertConfig config = BertConfig::from_json_file((tiny_dir() / "config.json").string());
  config.hidden_dropout_prob = 0.2;
  config.attention_probs_dropout_prob = 0.3;
  BertForSequenceClassification model(config);
  load_pretrained_weights(model, tiny_dir().string(),
                          BertForSequenceClassification::weight_load_options());
  model.gradient_checkpointing_enable(checkpointing);
  if (freeze_embeddings)
    for (auto& p : model.bert->embeddings->parameters()) p.set_requires_grad(false);
  model.train();
  Batch batch = reference_inputs();
  batch.set("labels", tensor_of(reference()["labels"]["single_label_classification"], at::kLong));
  at::manual_seed(1234);
  StepResult r;
  const compat::AutocastState before = compat::get_autocast_state(c10::DeviceType::CPU);
  if (autocast_bf16) compat::set_autocast_state(c10::DeviceType::CPU, {true, at::kBFloat16});
  ModelOutput out = model.forward(batch);
  compat::set_autocast_state(c10::DeviceType::CPU, before);  // backward outside, as the Trainer
  at::autocast::clear_cache();
  r.checkpointed_blocks = count_graph_nodes(out.loss, "CheckpointFunction");
  out.loss.backward();
  r.loss = out.loss.detach();
  for (const auto& p : model.named_parameters())
    if (p.value().grad().defined()) r.grads[p.key()] = p.value().grad().clone();
  r.next_random = at::rand({4});
  return r;
}

TEST_F(BertModelTest, GradientCheckpointingGivesTheSameGradients) {
  StepResult plain = train_step(false);
  StepResult recomputed = train_step(true);
  EXPECT_EQ(plain.checkpointed_blocks, 0);
  EXPECT_EQ(recomputed.checkpointed_blocks, 2);  // one per encoder layer
  EXPECT_TRUE(at::equal(plain.loss, recomputed.loss));
  ASSERT_EQ(plain.grads.size(), reference()["state_dict_keys"].size());
  ASSERT_EQ(recomputed.grads.size(), plain.grads.size());
  for (const auto& [name, grad] : plain.grads) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(at::equal(grad, recomputed.grads.at(name)));  // dropout masks replayed exactly
  }
  // The recompute forks the RNG: the caller's stream continues as without checkpointing.
  EXPECT_TRUE(at::equal(plain.next_random, recomputed.next_random));
  // The gradients compared are real ones.
  EXPECT_GT(
      plain.grads.at("bert.encoder.layer.0.attention.self.query.weight").abs().sum().item<double>(),
      0.0);
}

TEST_F(BertModelTest, GradientCheckpointingWorksWithFrozenEmbeddings) {
  StepResult plain = train_step(false, /*freeze_embeddings=*/true);
  StepResult recomputed = train_step(true, /*freeze_embeddings=*/true);
  EXPECT_EQ(recomputed.checkpointed_blocks, 2);
  ASSERT_EQ(recomputed.grads.size(), plain.grads.size());
  EXPECT_EQ(plain.grads.count("bert.embeddings.word_embeddings.weight"), 0u);
  for (const auto& [name, grad] : plain.grads) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(at::equal(grad, recomputed.grads.at(name)));
  }
}

TEST_F(BertModelTest, GradientCheckpointingReplaysAutocast) {
  StepResult plain = train_step(false, false, /*autocast_bf16=*/true);
  StepResult recomputed = train_step(true, false, /*autocast_bf16=*/true);
  StepResult fp32 = train_step(false);
  EXPECT_FALSE(at::equal(plain.loss, fp32.loss));  // bf16 really changed the numbers
  EXPECT_EQ(recomputed.checkpointed_blocks, 2);
  for (const auto& [name, grad] : plain.grads) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(at::equal(grad, recomputed.grads.at(name)));
  }
}

// ---- the last layer computes [CLS] only ------------------------------------------------------

/// The classifier's loss and every parameter's gradient: through BertModel's full last hidden
/// state (HF's way) or through model.forward (the last layer computes position 0 alone).
struct ClassifierStep {
  at::Tensor loss, logits;
  std::map<std::string, at::Tensor> grads;
  int slices = 0;  // SliceBackward nodes: the pruned last layer reads position 0 through narrow
};

ClassifierStep classifier_step(bool through_full_hidden_state, bool checkpointing) {
  BertConfig config = BertConfig::from_json_file((tiny_dir() / "config.json").string());
  config.hidden_dropout_prob = 0.0;  // no masks, so the two paths must agree
  config.attention_probs_dropout_prob = 0.0;
  BertForSequenceClassification model(config);
  load_pretrained_weights(model, tiny_dir().string(),
                          BertForSequenceClassification::weight_load_options());
  model.gradient_checkpointing_enable(checkpointing);
  model.train();
  Batch batch = reference_inputs();  // includes padded positions
  const at::Tensor labels =
      tensor_of(reference()["labels"]["single_label_classification"], at::kLong);
  ClassifierStep r;
  if (through_full_hidden_state) {
    const BertModelOutput full = model.bert->forward(
        batch.at("input_ids"), batch.at("attention_mask"), batch.at("token_type_ids"));
    EXPECT_EQ(full.last_hidden_state.size(1), batch.at("input_ids").size(1));
    r.logits = model.classifier->forward(full.pooler_output);
    r.loss = at::cross_entropy_loss(r.logits, labels);  // single-label classification
  } else {
    batch.set("labels", labels);
    ModelOutput out = model.forward(batch);
    r.logits = out.logits;
    r.loss = out.loss;
  }
  r.slices = count_graph_nodes(r.loss, "SliceBackward");
  r.loss.backward();
  for (const auto& p : model.named_parameters())
    if (p.value().grad().defined()) r.grads[p.key()] = p.value().grad().clone();
  return r;
}

TEST_F(BertModelTest, ClassifierComputesOnlyClsInTheLastLayerWithTheFullPathsGradients) {
  for (const bool checkpointing : {false, true}) {
    SCOPED_TRACE(checkpointing ? "gradient checkpointing" : "plain");
    const ClassifierStep full = classifier_step(true, checkpointing);
    const ClassifierStep pruned = classifier_step(false, checkpointing);
    EXPECT_EQ(full.slices, 0);
    // The last layer really ran on position 0 alone (under checkpointing its graph is hidden in
    // the CheckpointFunction node).
    if (!checkpointing) EXPECT_GT(pruned.slices, 0);
    expect_close(pruned.logits, full.logits.detach(), 1e-6);
    expect_close(pruned.loss, full.loss.detach(), 1e-6);
    ASSERT_EQ(pruned.grads.size(), reference()["state_dict_keys"].size());
    ASSERT_EQ(pruned.grads.size(), full.grads.size());
    for (const auto& [name, grad] : full.grads) {
      SCOPED_TRACE(name);
      expect_close(pruned.grads.at(name), grad, 1e-6);
    }
    // Parameters that only the pruned positions' rows use still get their full gradient: the
    // last layer's keys and values come from every position.
    EXPECT_GT(pruned.grads.at("bert.encoder.layer.1.attention.self.key.weight")
                  .abs()
                  .sum()
                  .item<double>(),
              0.0);
  }
}

TEST_F(BertModelTest, EncoderWithALastLayerQueryLengthGivesTheLeadingRows) {
  auto model = tiny_model();
  torch::NoGradGuard no_grad;
  const Batch batch = reference_inputs();
  const at::Tensor hidden =
      model->bert->embeddings->forward(batch.at("input_ids"), batch.at("token_type_ids"));
  const at::Tensor mask = extended_attention_mask(batch.at("attention_mask"), hidden.scalar_type());
  const at::Tensor full = model->bert->encoder->forward(hidden, mask);
  for (const int64_t rows : {int64_t{1}, int64_t{3}}) {
    const at::Tensor leading = model->bert->encoder->forward(hidden, mask, rows);
    ASSERT_EQ(leading.sizes(), (std::vector<int64_t>{full.size(0), rows, full.size(2)}));
    expect_close(leading, full.narrow(1, 0, rows), 1e-6);
  }
  testing::expect_error(
      [&] { BertModel(model->bert->config(), false)->pooled_output(batch.at("input_ids")); },
      {"pooled_output", "pooling layer"});
}

TEST_F(BertModelTest, GradientCheckpointingIsOffInEvalAndUnsupportedModelsRefuseIt) {
  auto model = tiny_model();  // eval mode, grad mode on
  model->gradient_checkpointing_enable(true);
  EXPECT_TRUE(model->supports_gradient_checkpointing());
  ModelOutput out = model->forward(reference_inputs());
  EXPECT_EQ(count_graph_nodes(out.logits, "CheckpointFunction"), 0);  // HF: training only
  expect_close(out.logits, tensor_of(reference()["logits"]["gelu"], at::kDouble));

  struct PlainModel : Model {
    ModelOutput forward(const Batch&) override { return {}; }
  } plain;
  EXPECT_FALSE(plain.supports_gradient_checkpointing());
  plain.gradient_checkpointing_enable(false);  // turning it off is always fine
  testing::expect_error([&] { plain.gradient_checkpointing_enable(); },
                        {"--gradient_checkpointing", "does not support"});
}

}  // namespace bert_model_test
}  // namespace ctrainer
