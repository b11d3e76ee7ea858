#include <ATen/ATen.h>

#include <ctrainer/models/generation/decoding.h>

namespace ctrainer::generation {

DecoderSteps::DecoderSteps(CausalLanguageModel& model, const DecodingPlan& plan)
    : model_(model),
      use_cache_(plan.config.use_cache.value_or(true)),
      cache_(model.num_decoder_layers()),
      attention_mask_(plan.attention_mask),
      position_ids_(plan.position_ids) {}

at::Tensor DecoderSteps::next_token_logits(const at::Tensor& sequences) {
  if (prefilled_) {
    // transformers' _update_model_kwargs_for_generation: the token chosen after the previous
    // call is a token (mask 1) at the position after the row's last.
    if (attention_mask_.defined())
      attention_mask_ = at::cat(
          {attention_mask_, at::ones({attention_mask_.size(0), 1}, attention_mask_.options())}, 1);
    position_ids_ = at::cat({position_ids_, position_ids_.narrow(1, -1, 1) + 1}, 1);
  }
  const int64_t length = sequences.size(1);
  TORCH_CHECK(position_ids_.size(1) == length, "generation: ", length,
              " tokens but position ids for ", position_ids_.size(1));
  if (!use_cache_) cache_ = KeyValueCache(model_.num_decoder_layers());
  const int64_t new_tokens = length - cache_.length();
  const at::Tensor logits = model_.next_token_logits(
      sequences.narrow(1, length - new_tokens, new_tokens).contiguous(), attention_mask_,
      position_ids_.narrow(1, length - new_tokens, new_tokens).contiguous(), cache_);
  prefilled_ = true;
  return logits.to(at::kFloat);
}

}  // namespace ctrainer::generation
