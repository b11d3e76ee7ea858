#include <ctrainer/models/gpt2/gpt2_heads.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/task_heads.h>

namespace ctrainer {
namespace {

at::Tensor run_transformer(GPT2Model& transformer, const Batch& batch) {
  return transformer->forward(batch.at("input_ids"), batch.get_or_undefined("attention_mask"),
                              batch.get_or_undefined("token_type_ids"),
                              batch.get_or_undefined("position_ids"));
}

template <typename Head>
std::shared_ptr<Head> load_head(const GPT2Config& config, const std::string& path,
                                bool ignore_mismatched_sizes, const std::string& architecture) {
  WeightLoadOptions load = GPT2PreTrainedModel::weight_load_options(architecture, config);
  load.ignore_mismatched_sizes = ignore_mismatched_sizes;
  return load_pretrained_head<Head>(
      config, path, load,
      [](torch::nn::Module& m, const GPT2Config& c, const std::vector<std::string>* keys) {
        init_gpt2_weights(m, c, keys);
      });
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
        "lm_head",
        AdaptableLinear(torch::nn::LinearOptions(config_.n_embd, config_.vocab_size).bias(false)));
  if (initialise_weights) init_gpt2_weights(*this, config_);
}

std::shared_ptr<GPT2LMHeadModel> GPT2LMHeadModel::from_pretrained(const GPT2Config& config,
                                                                  const std::string& path,
                                                                  bool ignore_mismatched_sizes) {
  // transformers 5: a tied config whose checkpoint holds a different lm_head.weight keeps that
  // head as its own parameter; an equal one is the embedding (one parameter).
  if (!config.tie_word_embeddings || !checkpoint_names_key(path, "lm_head.weight"))
    return load_head<GPT2LMHeadModel>(config, path, ignore_mismatched_sizes, "GPT2LMHeadModel");
  GPT2Config untied = config;
  untied.tie_word_embeddings = false;
  auto model = load_head<GPT2LMHeadModel>(untied, path, ignore_mismatched_sizes, "GPT2LMHeadModel");
  if (model->lm_head->weight.equal(model->transformer->wte->weight)) {
    model->unregister_module("lm_head");
    model->lm_head = nullptr;
    model->config_.tie_word_embeddings = true;
  }
  return model;
}

ModelOutput GPT2LMHeadModel::forward(const Batch& batch) {
  return causal_lm_output(run_transformer(transformer, batch), lm_head, transformer->wte->weight,
                          batch);
}

ModelOutput GPT2LMHeadModel::forward_with_num_items(const Batch& batch,
                                                    int64_t num_items_in_batch) {
  return causal_lm_output(run_transformer(transformer, batch), lm_head, transformer->wte->weight,
                          batch, num_items_in_batch);
}

at::Tensor GPT2LMHeadModel::next_token_logits(const at::Tensor& input_ids,
                                              const at::Tensor& attention_mask,
                                              const at::Tensor& position_ids,
                                              KeyValueCache& cache) {
  return last_position_logits(
      transformer->forward(input_ids, attention_mask, /*token_type_ids=*/{}, position_ids, &cache),
      lm_head, transformer->wte->weight);
}

GPT2ForSequenceClassification::GPT2ForSequenceClassification(const GPT2Config& config,
                                                             bool initialise_weights)
    : GPT2PreTrainedModel(config, "GPT2ForSequenceClassification") {
  score = register_module(
      "score",
      AdaptableLinear(torch::nn::LinearOptions(config_.n_embd, config_.num_labels()).bias(false)));
  if (initialise_weights) init_gpt2_weights(*this, config_);
}

std::shared_ptr<GPT2ForSequenceClassification> GPT2ForSequenceClassification::from_pretrained(
    const GPT2Config& config, const std::string& path, bool ignore_mismatched_sizes) {
  return load_head<GPT2ForSequenceClassification>(config, path, ignore_mismatched_sizes,
                                                  "GPT2ForSequenceClassification");
}

ModelOutput GPT2ForSequenceClassification::forward(const Batch& batch) {
  return decoder_classification_output(run_transformer(transformer, batch), score, batch,
                                       config_.pad_token_id, config_.problem_type,
                                       "GPT2ForSequenceClassification");
}

}  // namespace ctrainer
