#include <ctrainer/models/llama/llama_heads.h>

#include <ctrainer/models/task_heads.h>

namespace ctrainer {
namespace {

at::Tensor run_decoder(LlamaModel& model, const Batch& batch) {
  return model->forward(batch.at("input_ids"), batch.get_or_undefined("attention_mask"),
                        batch.get_or_undefined("position_ids"));
}

template <typename Head>
std::shared_ptr<Head> load_head(const LlamaConfig& config, const std::string& path,
                                bool ignore_mismatched_sizes, const std::string& architecture) {
  WeightLoadOptions load = LlamaPreTrainedModel::weight_load_options(architecture, config);
  load.ignore_mismatched_sizes = ignore_mismatched_sizes;
  return load_pretrained_head<Head>(
      config, path, load,
      [](torch::nn::Module& m, const LlamaConfig& c, const std::vector<std::string>* keys) {
        init_llama_weights(m, c, keys);
      });
}

AdaptableLinear bias_free(int64_t in, int64_t out) {
  return AdaptableLinear(torch::nn::LinearOptions(in, out).bias(false));
}

}  // namespace

LlamaPreTrainedModel::LlamaPreTrainedModel(const LlamaConfig& config, std::string architecture)
    : config_(config), architecture_(std::move(architecture)) {
  config_.validate();
  model = register_module("model", LlamaModel(config_));
}

std::optional<nlohmann::json> LlamaPreTrainedModel::config() const {
  nlohmann::json json = config_.to_json();
  json["architectures"] = nlohmann::json::array({architecture_});
  return json;
}

WeightLoadOptions LlamaPreTrainedModel::weight_load_options(const std::string& architecture,
                                                            const LlamaConfig& config) {
  WeightLoadOptions o;
  o.model_class = architecture;
  o.base_model_prefix = "model";
  o.ignore_unexpected = {R"((^|\.)rotary_emb\.inv_freq$)"};
  if (config.tie_word_embeddings) o.ignore_unexpected.push_back(R"(^lm_head\.weight$)");
  return o;
}

LlamaForCausalLM::LlamaForCausalLM(const LlamaConfig& config, bool initialise_weights)
    : LlamaPreTrainedModel(config, "LlamaForCausalLM") {
  if (!config_.tie_word_embeddings)
    lm_head = register_module("lm_head", bias_free(config_.hidden_size, config_.vocab_size));
  if (initialise_weights) init_llama_weights(*this, config_);
}

std::shared_ptr<LlamaForCausalLM> LlamaForCausalLM::from_pretrained(const LlamaConfig& config,
                                                                    const std::string& path,
                                                                    bool ignore_mismatched_sizes) {
  // transformers 5: a tied config whose checkpoint holds a different lm_head.weight keeps that
  // head as its own parameter; an equal one is the embedding (one parameter).
  if (!config.tie_word_embeddings || !checkpoint_names_key(path, "lm_head.weight"))
    return load_head<LlamaForCausalLM>(config, path, ignore_mismatched_sizes, "LlamaForCausalLM");
  LlamaConfig untied = config;
  untied.tie_word_embeddings = false;
  auto model =
      load_head<LlamaForCausalLM>(untied, path, ignore_mismatched_sizes, "LlamaForCausalLM");
  if (model->lm_head->weight.equal(model->model->embed_tokens->weight)) {
    model->unregister_module("lm_head");
    model->lm_head = nullptr;
    model->config_.tie_word_embeddings = true;
  }
  return model;
}

ModelOutput LlamaForCausalLM::forward(const Batch& batch) {
  return causal_lm_output(run_decoder(model, batch), lm_head, model->embed_tokens->weight, batch);
}

at::Tensor LlamaForCausalLM::next_token_logits(const at::Tensor& input_ids,
                                               const at::Tensor& attention_mask,
                                               const at::Tensor& position_ids,
                                               KeyValueCache& cache) {
  return last_position_logits(model->forward(input_ids, attention_mask, position_ids, &cache),
                              lm_head, model->embed_tokens->weight);
}

ModelOutput LlamaForCausalLM::forward_with_num_items(const Batch& batch,
                                                     int64_t num_items_in_batch) {
  return causal_lm_output(run_decoder(model, batch), lm_head, model->embed_tokens->weight, batch,
                          num_items_in_batch);
}

LlamaForSequenceClassification::LlamaForSequenceClassification(const LlamaConfig& config,
                                                               bool initialise_weights)
    : LlamaPreTrainedModel(config, "LlamaForSequenceClassification") {
  score = register_module("score", bias_free(config_.hidden_size, config_.num_labels()));
  if (initialise_weights) init_llama_weights(*this, config_);
}

std::shared_ptr<LlamaForSequenceClassification> LlamaForSequenceClassification::from_pretrained(
    const LlamaConfig& config, const std::string& path, bool ignore_mismatched_sizes) {
  return load_head<LlamaForSequenceClassification>(config, path, ignore_mismatched_sizes,
                                                   "LlamaForSequenceClassification");
}

ModelOutput LlamaForSequenceClassification::forward(const Batch& batch) {
  return decoder_classification_output(run_decoder(model, batch), score, batch,
                                       config_.pad_token_id, config_.problem_type,
                                       "LlamaForSequenceClassification");
}

}  // namespace ctrainer
