#include <ctrainer/models/bert/bert_for_sequence_classification.h>

#include <filesystem>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/task_heads.h>

namespace ctrainer {
BertForSequenceClassification::BertForSequenceClassification(const BertConfig& config,
                                                             bool initialise_weights)
    : config_(config) {
  config_.validate();
  bert =
      register_module("bert", BertModel(config_, /*add_pooling_layer=*/true, initialise_weights));
  dropout = register_module("dropout", Dropout(config_.effective_classifier_dropout()));
  classifier =
      register_module("classifier", AdaptableLinear(config_.hidden_size, config_.num_labels()));
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
  if (options.id2label) config.set_label_names(*options.id2label);
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
  PretrainedLoad loaded = build_and_load_pretrained(
      [&] {
        return std::make_shared<BertForSequenceClassification>(config,
                                                               /*initialise_weights=*/false);
      },
      path, load);
  init_missing_bert_weights(*loaded.model, loaded.fresh_keys, config.initializer_range);
  return std::static_pointer_cast<BertForSequenceClassification>(loaded.model);
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
        ->forward(batch.at("input_ids"), batch.get_or_undefined("attention_mask"),
                  batch.get_or_undefined("token_type_ids"))
        .pooler_output;
  }
  // Only [CLS] reaches the classifier: the last layer computes that row alone (HF computes every
  // row and drops all but one; the values and gradients are the same).
  return bert->pooled_output(batch.at("input_ids"), batch.get_or_undefined("attention_mask"),
                             batch.get_or_undefined("token_type_ids"));
}

ModelOutput BertForSequenceClassification::forward(const Batch& batch) {
  ModelOutput out;
  out.logits = classifier->forward(dropout->forward(pooled_output(batch)));
  if (batch.contains("labels")) out.loss = compute_loss(out.logits, batch.at("labels"));
  return out;
}

at::Tensor BertForSequenceClassification::compute_loss(const at::Tensor& logits,
                                                       const at::Tensor& labels) {
  return sequence_classification_loss(logits, labels, config_.problem_type);
}

}  // namespace ctrainer
