#include <ctrainer/models/bert/bert_for_sequence_classification.h>

#include <filesystem>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>

#include <torch/nn/functional/loss.h>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

namespace F = torch::nn::functional;

at::Tensor optional_input(const Batch& batch, const char* key) {
  return batch.contains(key) ? batch.at(key) : at::Tensor();
}

bool is_integer(at::ScalarType t) {
  return t == at::kLong || t == at::kInt;
}

}  // namespace

BertForSequenceClassification::BertForSequenceClassification(const BertConfig& config,
                                                             bool initialise_weights)
    : config_(config) {
  config_.validate();
  bert =
      register_module("bert", BertModel(config_, /*add_pooling_layer=*/true, initialise_weights));
  dropout = register_module("dropout", Dropout(config_.effective_classifier_dropout()));
  classifier =
      register_module("classifier", torch::nn::Linear(config_.hidden_size, config_.num_labels()));
  // BertModel initialised itself; the head gets the same rules (HF post_init).
  if (initialise_weights) init_bert_weights(*classifier, config_.initializer_range);
}

WeightLoadOptions BertForSequenceClassification::weight_load_options() {
  WeightLoadOptions o;
  o.model_class = "BertForSequenceClassification";
  o.base_model_prefix = "bert";
  // Non-persistent buffers that older transformers versions saved (HF drops every buffer name
  // from the unexpected keys); we register no buffers, so they are silently ignored.
  o.ignore_unexpected = {R"((^|\.)embeddings\.(position_ids|token_type_ids)$)"};
  return o;
}

std::shared_ptr<BertForSequenceClassification> BertForSequenceClassification::from_pretrained(
    const std::string& dir, const BertFromPretrainedOptions& options) {
  if (!std::filesystem::is_directory(dir))
    throw ArgumentError("model folder " + dir +
                        " does not exist (expected config.json and model.safetensors in it)");
  const std::string config_path = (std::filesystem::path(dir) / "config.json").string();
  BertConfig config = BertConfig::from_json_file(config_path);
  if (options.id2label) {
    if (options.id2label->empty()) throw ArgumentError("id2label needs at least one label");
    config.id2label = *options.id2label;
    config.label2id.clear();
    for (size_t i = 0; i < config.id2label.size(); ++i)
      config.label2id[config.id2label[i]] = static_cast<int64_t>(i);
  }
  if (options.num_labels) config.set_num_labels(*options.num_labels);
  if (options.problem_type) config.problem_type = options.problem_type;
  config.validate(config_path);
  WeightLoadOptions load = weight_load_options();
  load.ignore_mismatched_sizes = options.ignore_mismatched_sizes;
  return with_pretrained_weights(config, dir, load);
}

std::shared_ptr<BertForSequenceClassification>
BertForSequenceClassification::with_pretrained_weights(const BertConfig& config,
                                                       const std::string& path,
                                                       const WeightLoadOptions& load) {
  // transformers 5 builds on the meta device and draws nothing for what it loads. HF's
  // initialisation is skipped; libtorch's modules still draw their defaults as they are built:
  // build, load, then rewind the generator.
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  at::Tensor before;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    before = generator.get_state();
  }
  auto model =
      std::make_shared<BertForSequenceClassification>(config, /*initialise_weights=*/false);
  const WeightLoadReport report = load_pretrained_weights(*model, path, load);
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(before);
  }
  std::vector<std::string> fresh = report.missing_keys;
  for (const MismatchedKey& key : report.mismatched_keys) fresh.push_back(key.key);
  init_missing_bert_weights(*model, fresh, config.initializer_range);
  return model;
}

void BertForSequenceClassification::save_pretrained(const std::string& dir) const {
  ctrainer::save_pretrained(*this, dir, "BertForSequenceClassification");
}

std::optional<nlohmann::json> BertForSequenceClassification::config() const {
  // Trainer checkpoints write this as config.json: name the class as HF's save_pretrained does.
  nlohmann::json json = config_.to_json();
  json["architectures"] = nlohmann::json::array({"BertForSequenceClassification"});
  return json;
}

void BertForSequenceClassification::gradient_checkpointing_enable(bool enable) {
  bert->set_gradient_checkpointing(enable);
}

at::Tensor BertForSequenceClassification::pooled_output(const Batch& batch) {
  if (full_last_layer_) {
    return bert
        ->forward(batch.at("input_ids"), optional_input(batch, "attention_mask"),
                  optional_input(batch, "token_type_ids"))
        .pooler_output;
  }
  // Only [CLS] reaches the classifier: the last layer computes that row alone (HF computes every
  // row and drops all but one; the values and gradients are the same).
  return bert->pooled_output(batch.at("input_ids"), optional_input(batch, "attention_mask"),
                             optional_input(batch, "token_type_ids"));
}

ModelOutput BertForSequenceClassification::forward(const Batch& batch) {
  ModelOutput out;
  out.logits = classifier->forward(dropout->forward(pooled_output(batch)));
  if (batch.contains("labels")) out.loss = compute_loss(out.logits, batch.at("labels"));
  return out;
}

at::Tensor BertForSequenceClassification::compute_loss(const at::Tensor& logits,
                                                       const at::Tensor& labels) {
  const int64_t num_labels = config_.num_labels();
  if (!config_.problem_type) {
    // HF mutates config.problem_type on the first labelled batch, and so it is saved.
    if (num_labels == 1) {
      config_.problem_type = "regression";
    } else if (is_integer(labels.scalar_type())) {
      config_.problem_type = "single_label_classification";
    } else {
      config_.problem_type = "multi_label_classification";
    }
  }
  const std::string& problem = *config_.problem_type;
  if (problem == "regression") {
    at::Tensor target = labels.to(logits.scalar_type());
    if (num_labels == 1) return F::mse_loss(logits.squeeze(), target.squeeze());
    return F::mse_loss(logits, target);
  }
  if (problem == "single_label_classification") {
    if (labels.is_floating_point())
      throw ArgumentError(
          "labels must be integer class ids for single_label_classification, got a floating-point "
          "tensor (set problem_type to regression or multi_label_classification?)");
    return F::cross_entropy(logits.view({-1, num_labels}), labels.view({-1}).to(at::kLong));
  }
  // multi_label_classification
  if (labels.sizes() != logits.sizes())
    throw ArgumentError("multi_label_classification labels must be [batch, num_labels] = " +
                        std::to_string(logits.size(0)) + " x " + std::to_string(num_labels) +
                        " (0/1 per label)");
  return F::binary_cross_entropy_with_logits(logits, labels.to(logits.scalar_type()));
}

}  // namespace ctrainer
