#include <ctrainer/models/bert/bert_for_masked_lm.h>

#include <torch/nn/init.h>

#include <ctrainer/models/activations.h>
#include <ctrainer/models/linear_kernel.h>
#include <ctrainer/models/token_cross_entropy.h>

namespace ctrainer {
namespace {

constexpr int64_t kIgnoreIndex = -100;

at::Tensor optional_input(const Batch& batch, const char* key) {
  return batch.contains(key) ? batch.at(key) : at::Tensor();
}

bool ties_word_embeddings(const BertConfig& config) {
  return config.extra.value("tie_word_embeddings", true);
}

}  // namespace

BertPredictionHeadTransformImpl::BertPredictionHeadTransformImpl(const BertConfig& config)
    : activation_(config.hidden_act) {
  dense = register_module("dense", AdaptableLinear(config.hidden_size, config.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(
          torch::nn::LayerNormOptions({config.hidden_size}).eps(config.layer_norm_eps)));
}

at::Tensor BertPredictionHeadTransformImpl::forward(const at::Tensor& hidden) {
  return LayerNorm->forward(apply_activation(activation_, dense->forward(hidden)));
}

BertLMPredictionHeadImpl::BertLMPredictionHeadImpl(const BertConfig& config,
                                                   bool tie_word_embeddings) {
  transform = register_module("transform", BertPredictionHeadTransform(config));
  if (tie_word_embeddings) {
    bias = register_parameter("bias", at::zeros({config.vocab_size}));
    return;
  }
  // Untied, transformers ties nothing: the decoder has its own bias and cls.predictions.bias is
  // an unused parameter that its checkpoints still hold. Kept (frozen) so that they round-trip.
  decoder = register_module("decoder", AdaptableLinear(config.hidden_size, config.vocab_size));
  bias = register_parameter("bias", at::zeros({config.vocab_size}), /*requires_grad=*/false);
}

at::Tensor BertLMPredictionHeadImpl::forward(const at::Tensor& hidden,
                                             const at::Tensor& word_embeddings) {
  if (decoder) return decoder->forward(transform->forward(hidden));
  return ctrainer::linear(transform->forward(hidden), word_embeddings, bias);
}

BertOnlyMLMHeadImpl::BertOnlyMLMHeadImpl(const BertConfig& config, bool tie_word_embeddings) {
  predictions = register_module("predictions", BertLMPredictionHead(config, tie_word_embeddings));
}

BertForMaskedLM::BertForMaskedLM(const BertConfig& config, bool initialise_weights)
    : config_(config), tie_word_embeddings_(ties_word_embeddings(config)) {
  config_.validate();
  bert =
      register_module("bert", BertModel(config_, /*add_pooling_layer=*/false, initialise_weights));
  cls = register_module("cls", BertOnlyMLMHead(config_, tie_word_embeddings_));
  // BertModel initialised itself; the head gets HF's rules, its bias zero (already).
  if (initialise_weights) init_bert_weights(*cls, config_.initializer_range);
}

WeightLoadOptions BertForMaskedLM::weight_load_options(bool tie_word_embeddings) {
  WeightLoadOptions o;
  o.model_class = "BertForMaskedLM";
  o.base_model_prefix = "bert";
  // Buffers older versions saved; the pooler (HF's _keys_to_ignore_on_load_unexpected); when
  // tied, the decoder's weight and bias (HF ties them to the word embeddings and
  // cls.predictions.bias, which hold the values).
  o.ignore_unexpected = {R"((^|\.)embeddings\.(position_ids|token_type_ids)$)",
                         R"((^|\.)pooler\.)"};
  if (tie_word_embeddings)
    o.ignore_unexpected.push_back(R"(^cls\.predictions\.decoder\.(weight|bias)$)");
  return o;
}

std::shared_ptr<BertForMaskedLM> BertForMaskedLM::from_pretrained(const BertConfig& config,
                                                                  const std::string& path,
                                                                  bool ignore_mismatched_sizes) {
  WeightLoadOptions load = weight_load_options(ties_word_embeddings(config));
  load.ignore_mismatched_sizes = ignore_mismatched_sizes;
  PretrainedLoad loaded = build_and_load_pretrained(
      [&] { return std::make_shared<BertForMaskedLM>(config, /*initialise_weights=*/false); }, path,
      load);
  init_missing_bert_weights(*loaded.model, loaded.fresh_keys, config.initializer_range);
  return std::static_pointer_cast<BertForMaskedLM>(loaded.model);
}

std::optional<nlohmann::json> BertForMaskedLM::config() const {
  nlohmann::json json = config_.to_json();
  json["architectures"] = nlohmann::json::array({"BertForMaskedLM"});
  return json;
}

ModelOutput BertForMaskedLM::forward(const Batch& batch) {
  return run(batch, std::nullopt);
}

ModelOutput BertForMaskedLM::forward_with_num_items(const Batch& batch,
                                                    int64_t num_items_in_batch) {
  return run(batch, num_items_in_batch);
}

ModelOutput BertForMaskedLM::run(const Batch& batch, std::optional<int64_t> num_items_in_batch) {
  const at::Tensor hidden =
      bert->forward(batch.at("input_ids"), optional_input(batch, "attention_mask"),
                    optional_input(batch, "token_type_ids"))
          .last_hidden_state;
  ModelOutput out;
  out.logits = cls->predictions->forward(hidden, bert->embeddings->word_embeddings->weight);
  if (!batch.contains("labels")) return out;
  const int64_t vocabulary = out.logits.size(-1);
  const at::Tensor flat_logits = out.logits.reshape({-1, vocabulary}).to(at::kFloat);
  const at::Tensor flat_labels = batch.at("labels").reshape({-1}).to(at::kLong);
  if (num_items_in_batch) {
    out.loss = token_cross_entropy(flat_logits, flat_labels, at::Reduction::Sum, kIgnoreIndex) /
               static_cast<double>(*num_items_in_batch);
  } else {
    out.loss = token_cross_entropy(flat_logits, flat_labels, at::Reduction::Mean, kIgnoreIndex);
  }
  return out;
}

}  // namespace ctrainer
