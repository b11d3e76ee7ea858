#include <ctrainer/models/t5/t5_heads.h>

#include <cmath>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/generation/shift_tokens.h>
#include <ctrainer/models/linear_kernel.h>
#include <ctrainer/models/task_heads.h>

namespace ctrainer {

T5ForConditionalGeneration::T5ForConditionalGeneration(const T5Config& config,
                                                       bool initialise_weights)
    : config_(config) {
  config_.validate();
  shared = register_module("shared", torch::nn::Embedding(config_.vocab_size, config_.d_model));
  encoder = register_module("encoder", T5Stack(config_, /*is_decoder=*/false, shared));
  decoder = register_module("decoder", T5Stack(config_, /*is_decoder=*/true, shared));
  if (!config_.tie_word_embeddings)
    lm_head = register_module(
        "lm_head",
        AdaptableLinear(torch::nn::LinearOptions(config_.d_model, config_.vocab_size).bias(false)));
  if (initialise_weights) init_t5_weights(*this, config_);
}

std::shared_ptr<T5ForConditionalGeneration> T5ForConditionalGeneration::from_config(
    const T5Config& config) {
  T5Config tied = config;
  tied.tie_word_embeddings = true;
  return std::make_shared<T5ForConditionalGeneration>(tied);
}

WeightLoadOptions T5ForConditionalGeneration::weight_load_options(bool tied_head) {
  WeightLoadOptions o;
  o.model_class = "T5ForConditionalGeneration";
  // HF _keys_to_ignore_on_load_unexpected, and the tied copies of shared.weight.
  o.ignore_unexpected = {
      R"(^decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight$)",
      R"(^(encoder|decoder)\.embed_tokens\.weight$)"};
  if (tied_head) o.ignore_unexpected.push_back(R"(^lm_head\.weight$)");
  return o;
}

std::shared_ptr<T5ForConditionalGeneration> T5ForConditionalGeneration::from_pretrained(
    const T5Config& config, const std::string& path, bool ignore_mismatched_sizes) {
  T5Config resolved = config;
  resolved.tie_word_embeddings = !checkpoint_names_key(path, "lm_head.weight");
  WeightLoadOptions load = weight_load_options(resolved.tie_word_embeddings);
  load.ignore_mismatched_sizes = ignore_mismatched_sizes;
  auto model = load_pretrained_head<T5ForConditionalGeneration>(
      resolved, path, load,
      [](torch::nn::Module& m, const T5Config& c, const std::vector<std::string>* keys) {
        init_t5_weights(m, c, keys);
      });
  // A head equal to shared.weight is tied, as transformers ties it.
  if (model->lm_head && model->lm_head->weight.equal(model->shared->weight)) {
    model->unregister_module("lm_head");
    model->lm_head = nullptr;
    model->config_.tie_word_embeddings = true;
  }
  return model;
}

at::Tensor T5ForConditionalGeneration::lm_logits(const at::Tensor& hidden) {
  const at::Tensor scaled = config_.scale_decoder_outputs
                                ? hidden * std::pow(static_cast<double>(config_.d_model), -0.5)
                                : hidden;
  return lm_head ? lm_head->forward(scaled) : ctrainer::linear(scaled, shared->weight);
}

ModelOutput T5ForConditionalGeneration::forward(const Batch& batch) {
  return run(batch, std::nullopt);
}

ModelOutput T5ForConditionalGeneration::forward_with_num_items(const Batch& batch,
                                                               int64_t num_items_in_batch) {
  return run(batch, num_items_in_batch);
}

ModelOutput T5ForConditionalGeneration::run(const Batch& batch,
                                            std::optional<int64_t> num_items_in_batch) {
  const at::Tensor attention_mask = batch.get_or_undefined("attention_mask");
  at::Tensor decoder_input_ids = batch.get_or_undefined("decoder_input_ids");
  if (!decoder_input_ids.defined()) {
    if (!batch.contains("labels"))
      throw ArgumentError(
          "T5ForConditionalGeneration: the batch needs decoder_input_ids or labels");
    if (!config_.decoder_start_token_id || !config_.pad_token_id)
      throw ArgumentError(
          "T5ForConditionalGeneration: making decoder_input_ids from labels needs "
          "decoder_start_token_id and pad_token_id in config.json (T5 uses the pad id, 0)");
    decoder_input_ids = generation::shift_tokens_right(batch.at("labels"), *config_.pad_token_id,
                                                       *config_.decoder_start_token_id);
  }
  const at::Tensor encoder_hidden = encoder->forward(batch.at("input_ids"), attention_mask);
  const at::Tensor decoder_hidden =
      decoder->forward(decoder_input_ids, batch.get_or_undefined("decoder_attention_mask"),
                       encoder_hidden, attention_mask);
  return seq2seq_lm_output(lm_logits(decoder_hidden), encoder_hidden, batch, num_items_in_batch);
}

at::Tensor T5ForConditionalGeneration::encode(const at::Tensor& input_ids,
                                              const at::Tensor& attention_mask) {
  return encoder->forward(input_ids, attention_mask);
}

at::Tensor T5ForConditionalGeneration::decoder_next_token_logits(
    const at::Tensor& decoder_input_ids, const at::Tensor& encoder_hidden,
    const at::Tensor& encoder_attention_mask, KeyValueCache& cache, CrossAttentionCache& cross) {
  const at::Tensor hidden =
      decoder->forward(decoder_input_ids, /*attention_mask=*/{}, encoder_hidden,
                       encoder_attention_mask, &cache, &cross);
  return lm_logits(hidden.narrow(1, hidden.size(1) - 1, 1)).squeeze(1);
}

std::optional<nlohmann::json> T5ForConditionalGeneration::config() const {
  nlohmann::json json = config_.to_json();
  // transformers 5 writes true whatever the head: the checkpoint says whether it is tied.
  json["tie_word_embeddings"] = true;
  json["architectures"] = nlohmann::json::array({"T5ForConditionalGeneration"});
  return json;
}

double T5ForConditionalGeneration::floating_point_ops(const Batch& batch) const {
  // HF's estimate counts the encoder's input tokens only (the model's main input).
  return Model::floating_point_ops(batch);
}

}  // namespace ctrainer
