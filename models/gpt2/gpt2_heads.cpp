#include <ctrainer/models/gpt2/gpt2_heads.h>

#include <ATen/TensorIndexing.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/padding.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/sequence_classification_loss.h>

namespace ctrainer {
namespace {

at::Tensor optional_input(const Batch& batch, const char* key) {
  return batch.contains(key) ? batch.at(key) : at::Tensor();
}

at::Tensor run_transformer(GPT2Model& transformer, const Batch& batch) {
  return transformer->forward(batch.at("input_ids"), optional_input(batch, "attention_mask"),
                              optional_input(batch, "token_type_ids"));
}

template <typename Head>
std::shared_ptr<Head> load_head(const GPT2Config& config, const std::string& path,
                                bool ignore_mismatched_sizes, const std::string& architecture) {
  WeightLoadOptions load = GPT2PreTrainedModel::weight_load_options(architecture, config);
  load.ignore_mismatched_sizes = ignore_mismatched_sizes;
  PretrainedLoad loaded = build_and_load_pretrained(
      [&] { return std::make_shared<Head>(config, /*initialise_weights=*/false); }, path, load);
  init_gpt2_weights(*loaded.model, config, &loaded.fresh_keys);
  return std::static_pointer_cast<Head>(loaded.model);
}

}  // namespace

GPT2PreTrainedModel::GPT2PreTrainedModel(const GPT2Config& config, std::string architecture)
    : config_(config), architecture_(std::move(architecture)) {
  config_.validate();
  transformer = register_module("transformer", GPT2Model(config_));
}

std::optional<nlohmann::json> GPT2PreTrainedModel::config() const {
  nlohmann::json json = config_.to_json();
  json["architectures"] = nlohmann::json::array({architecture_});
  return json;
}

WeightLoadOptions GPT2PreTrainedModel::weight_load_options(const std::string& architecture,
                                                           const GPT2Config& config) {
  WeightLoadOptions o;
  o.model_class = architecture;
  o.base_model_prefix = "transformer";
  // HF _keys_to_ignore_on_load_unexpected: the causal-mask buffers older versions saved.
  o.ignore_unexpected = {R"((^|\.)attn\.(masked_)?bias$)"};
  // A tied head is the embedding itself: a checkpoint that also stores it gives nothing new.
  if (config.tie_word_embeddings) o.ignore_unexpected.push_back(R"(^lm_head\.weight$)");
  return o;
}

GPT2LMHeadModel::GPT2LMHeadModel(const GPT2Config& config, bool initialise_weights)
    : GPT2PreTrainedModel(config, "GPT2LMHeadModel") {
  if (!config_.tie_word_embeddings)
    lm_head = register_module(
        "lm_head", torch::nn::Linear(
                       torch::nn::LinearOptions(config_.n_embd, config_.vocab_size).bias(false)));
  if (initialise_weights) init_gpt2_weights(*this, config_);
}

std::shared_ptr<GPT2LMHeadModel> GPT2LMHeadModel::from_pretrained(const GPT2Config& config,
                                                                  const std::string& path,
                                                                  bool ignore_mismatched_sizes) {
  return load_head<GPT2LMHeadModel>(config, path, ignore_mismatched_sizes, "GPT2LMHeadModel");
}

ModelOutput GPT2LMHeadModel::forward(const Batch& batch) {
  const at::Tensor hidden = run_transformer(transformer, batch);
  ModelOutput out;
  out.logits = lm_head ? lm_head->forward(hidden) : at::linear(hidden, transformer->wte->weight);
  if (batch.contains("labels")) out.loss = causal_lm_loss(out.logits, batch.at("labels"));
  return out;
}

at::Tensor causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels) {
  namespace F = torch::nn::functional;
  constexpr int64_t kIgnoreIndex = -100;
  const at::Tensor shifted =
      F::pad(labels.to(at::kLong), F::PadFuncOptions({0, 1}).value(kIgnoreIndex))
          .narrow(-1, 1, labels.size(-1));
  return F::cross_entropy(logits.to(at::kFloat).reshape({-1, logits.size(-1)}),
                          shifted.reshape({-1}),
                          F::CrossEntropyFuncOptions().ignore_index(kIgnoreIndex));
}

GPT2ForSequenceClassification::GPT2ForSequenceClassification(const GPT2Config& config,
                                                             bool initialise_weights)
    : GPT2PreTrainedModel(config, "GPT2ForSequenceClassification") {
  score = register_module(
      "score", torch::nn::Linear(
                   torch::nn::LinearOptions(config_.n_embd, config_.num_labels()).bias(false)));
  if (initialise_weights) init_gpt2_weights(*this, config_);
}

std::shared_ptr<GPT2ForSequenceClassification> GPT2ForSequenceClassification::from_pretrained(
    const GPT2Config& config, const std::string& path, bool ignore_mismatched_sizes) {
  return load_head<GPT2ForSequenceClassification>(config, path, ignore_mismatched_sizes,
                                                  "GPT2ForSequenceClassification");
}

ModelOutput GPT2ForSequenceClassification::forward(const Batch& batch) {
  const at::Tensor& input_ids = batch.at("input_ids");
  const int64_t batch_size = input_ids.size(0), length = input_ids.size(1);
  at::Tensor last;
  if (config_.pad_token_id) {
    // HF: the rightmost token that is not padding (left or right padding alike).
    const at::Tensor not_pad = input_ids.ne(*config_.pad_token_id).to(at::kInt);
    last = (at::arange(length, input_ids.options().dtype(at::kInt)) * not_pad).argmax(-1);
  } else if (batch_size != 1) {
    throw ArgumentError(
        "GPT2ForSequenceClassification: cannot handle batches of more than one sequence without "
        "a padding token: set pad_token_id in config.json (GPT-2 checkpoints have none; the eos "
        "id is the usual choice) or use batches of one");
  } else {
    last = at::full({1}, length - 1, input_ids.options().dtype(at::kLong));
  }
  const at::Tensor hidden = run_transformer(transformer, batch);
  const at::Tensor pooled = hidden.index(
      {at::arange(batch_size, input_ids.options().dtype(at::kLong)), last.to(at::kLong)});
  ModelOutput out;
  out.logits = score->forward(pooled);
  if (batch.contains("labels"))
    out.loss = sequence_classification_loss(out.logits, batch.at("labels"), config_.problem_type);
  return out;
}

}  // namespace ctrainer
