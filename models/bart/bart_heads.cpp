#include <ctrainer/models/bart/bart_heads.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/generation/shift_tokens.h>
#include <ctrainer/models/linear_kernel.h>
#include <ctrainer/models/task_heads.h>

namespace ctrainer {

BartForConditionalGeneration::BartForConditionalGeneration(const BartConfig& config,
                                                           bool initialise_weights)
    : config_(config) {
  config_.validate();
  model = register_module("model", BartModel(config_));
  final_logits_bias = register_buffer("final_logits_bias", at::zeros({1, config_.vocab_size}));
  if (!config_.tie_word_embeddings)
    lm_head = register_module(
        "lm_head",
        AdaptableLinear(torch::nn::LinearOptions(config_.d_model, config_.vocab_size).bias(false)));
  if (initialise_weights) init_bart_weights(*this, config_);
}

WeightLoadOptions BartForConditionalGeneration::weight_load_options(bool tied_head) {
  WeightLoadOptions o;
  o.model_class = "BartForConditionalGeneration";
  o.base_model_prefix = "model";
  o.ignore_unexpected = {R"(^(model\.)?(encoder|decoder)\.embed_tokens\.weight$)"};
  if (tied_head) o.ignore_unexpected.push_back(R"(^lm_head\.weight$)");
  return o;
}

std::shared_ptr<BartForConditionalGeneration> BartForConditionalGeneration::from_pretrained(
    const BartConfig& config, const std::string& path, bool ignore_mismatched_sizes) {
  BartConfig resolved = config;
  const bool own_head = checkpoint_names_key(path, "lm_head.weight");
  resolved.tie_word_embeddings = !own_head;
  WeightLoadOptions load = weight_load_options(!own_head);
  load.ignore_mismatched_sizes = ignore_mismatched_sizes;
  auto loaded = load_pretrained_head<BartForConditionalGeneration>(
      resolved, path, load,
      [](torch::nn::Module& m, const BartConfig& c, const std::vector<std::string>* keys) {
        init_bart_weights(m, c, keys);
      });
  // A head equal to the embedding is tied, as transformers ties it (unless config.json says
  // tie_word_embeddings false).
  if (loaded->lm_head && config.tie_word_embeddings &&
      loaded->lm_head->weight.equal(loaded->model->shared->weight)) {
    loaded->unregister_module("lm_head");
    loaded->lm_head = nullptr;
    loaded->config_.tie_word_embeddings = true;
  }
  return loaded;
}

at::Tensor BartForConditionalGeneration::lm_logits(const at::Tensor& hidden) {
  const at::Tensor logits =
      lm_head ? lm_head->forward(hidden) : ctrainer::linear(hidden, model->shared->weight);
  return logits + final_logits_bias;
}

ModelOutput BartForConditionalGeneration::forward(const Batch& batch) {
  return run(batch, std::nullopt);
}

ModelOutput BartForConditionalGeneration::forward_with_num_items(const Batch& batch,
                                                                 int64_t num_items_in_batch) {
  return run(batch, num_items_in_batch);
}

ModelOutput BartForConditionalGeneration::run(const Batch& batch,
                                              std::optional<int64_t> num_items_in_batch) {
  const at::Tensor input_ids = batch.at("input_ids");
  const at::Tensor attention_mask = batch.get_or_undefined("attention_mask");
  at::Tensor decoder_input_ids = batch.get_or_undefined("decoder_input_ids");
  if (!decoder_input_ids.defined()) {
    if (!config_.decoder_start_token_id || !config_.pad_token_id)
      throw ArgumentError(
          "BartForConditionalGeneration: making decoder_input_ids needs decoder_start_token_id "
          "and pad_token_id in config.json");
    // From the labels; without them BartModel shifts the input itself.
    decoder_input_ids =
        generation::shift_tokens_right(batch.contains("labels") ? batch.at("labels") : input_ids,
                                       *config_.pad_token_id, *config_.decoder_start_token_id);
  }
  const at::Tensor encoder_hidden = model->encode(input_ids, attention_mask);
  const at::Tensor decoder_hidden =
      model->decode(decoder_input_ids, batch.get_or_undefined("decoder_attention_mask"),
                    encoder_hidden, attention_mask);
  return seq2seq_lm_output(lm_logits(decoder_hidden), encoder_hidden, batch, num_items_in_batch);
}

at::Tensor BartForConditionalGeneration::encode(const at::Tensor& input_ids,
                                                const at::Tensor& attention_mask) {
  return model->encode(input_ids, attention_mask);
}

at::Tensor BartForConditionalGeneration::decoder_next_token_logits(
    const at::Tensor& decoder_input_ids, const at::Tensor& encoder_hidden,
    const at::Tensor& encoder_attention_mask, KeyValueCache& cache, CrossAttentionCache& cross) {
  const at::Tensor hidden = model->decode(decoder_input_ids, /*attention_mask=*/{}, encoder_hidden,
                                          encoder_attention_mask, &cache, &cross);
  return lm_logits(hidden.narrow(1, hidden.size(1) - 1, 1)).squeeze(1);
}

std::optional<nlohmann::json> BartForConditionalGeneration::config() const {
  nlohmann::json json = config_.to_json();
  json["architectures"] = nlohmann::json::array({"BartForConditionalGeneration"});
  return json;
}

}  // namespace ctrainer
