// generate()'s preparation, as transformers 5.24's GenerationMixin.generate orders it: settings
// merged, special tokens, the attention mask and position ids, rows repeated for beams, lengths,
// then the decoding loop of the configuration's mode.
#include <ctrainer/models/generation/generate.h>

#include <algorithm>
#include <string>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/generation/decoding.h>

namespace ctrainer::generation {

namespace {

constexpr int64_t kDefaultNewTokens = 20;  // transformers' global max_length default

/// GenerationConfig.validate's refusals of num_return_sequences.
void check_return_sequences(const GenerationConfig& c) {
  const int64_t returned = *c.num_return_sequences, beams = *c.num_beams;
  if (returned > 1 && beams == 1 && !*c.do_sample)
    throw ArgumentError(
        "generation: num_return_sequences " + std::to_string(returned) +
        " needs sampling (do_sample) or beam search (num_beams > 1); greedy search returns one "
        "sequence per prompt");
  if (beams > 1 && returned > beams)
    throw ArgumentError("generation: num_return_sequences (" + std::to_string(returned) +
                        ") has to be at most num_beams (" + std::to_string(beams) + ")");
}

/// _prepare_attention_mask_for_generation: inferred from padding when the prompt holds
/// pad_token_id and it is not an eos id; else every token counts.
at::Tensor infer_attention_mask(const at::Tensor& input_ids, const DecodingPlan& plan) {
  const at::Tensor all_tokens = at::ones_like(input_ids, input_ids.options().dtype(at::kLong));
  if (!plan.pad_token_id) return all_tokens;
  const int64_t pad = *plan.pad_token_id;
  const bool pad_in_prompt = input_ids.eq(pad).any().item<bool>();
  const bool pad_is_eos = std::find(plan.eos_token_ids.begin(), plan.eos_token_ids.end(), pad) !=
                          plan.eos_token_ids.end();
  return pad_in_prompt && !pad_is_eos ? input_ids.ne(pad).to(at::kLong) : all_tokens;
}

void check_inputs(const at::Tensor& input_ids, const at::Tensor& attention_mask) {
  if (!input_ids.defined() || input_ids.dim() != 2 || input_ids.size(1) == 0 ||
      !at::isIntegralType(input_ids.scalar_type(), /*includeBool=*/false))
    throw ArgumentError(
        "generation: input_ids must be integer token ids [batch, prompt_length] with at least "
        "one token per row");
  if (attention_mask.defined() && attention_mask.sizes() != input_ids.sizes())
    throw ArgumentError("generation: attention_mask must have input_ids' shape [batch, " +
                        std::to_string(input_ids.size(1)) + "]");
}

/// The settings (call over model over global defaults) and special tokens of a plan
/// (_prepare_generation_config, _prepare_special_tokens); returns whether max_length was unset.
bool prepare_settings(DecodingPlan& plan, const GenerationConfig& call,
                      const GenerationConfig& model_defaults,
                      std::optional<at::Generator> generator, int64_t batch_size) {
  const GenerationConfig merged = call.merged_over(model_defaults);
  plan.config = merged.with_global_defaults();
  check_return_sequences(plan.config);
  plan.generator = std::move(generator);
  plan.batch_size = batch_size;
  if (plan.config.eos_token_id) plan.eos_token_ids = plan.config.eos_token_id->ids;
  plan.pad_token_id = plan.config.pad_token_id;
  if (!plan.pad_token_id && !plan.eos_token_ids.empty())
    plan.pad_token_id = plan.eos_token_ids.front();
  return !merged.max_length.has_value();
}

/// Repeats each row for the beams or returned sequences (_expand_inputs_for_generation).
at::Tensor expanded(const at::Tensor& t, const GenerationConfig& config) {
  const int64_t expand = std::max(*config.num_beams, *config.num_return_sequences);
  return expand == 1 || !t.defined() ? t : t.repeat_interleave(expand, 0);
}

/// _prepare_generated_length for a (decoder) prompt of `prompt_length` tokens, then the mode's
/// decoding loop.
GenerateOutput decode(CausalLanguageModel& model, DecodingPlan& plan, bool default_max_length,
                      int64_t prompt_length, const at::Tensor& processor_mask) {
  GenerationConfig& config = plan.config;
  if (config.max_new_tokens) {
    config.max_length = *config.max_new_tokens + prompt_length;
  } else if (default_max_length) {
    config.max_length = kDefaultNewTokens + prompt_length;
    if (auto limit = model.max_position_embeddings())
      config.max_length = std::min(*config.max_length, *limit);
  }
  if (config.min_new_tokens) config.min_length = *config.min_new_tokens + prompt_length;
  plan.max_length = *config.max_length;
  if (prompt_length >= plan.max_length)
    throw ArgumentError("generation: the prompt has " + std::to_string(prompt_length) +
                        " tokens but max_length is " + std::to_string(plan.max_length) +
                        "; set max_new_tokens (or a larger max_length)");
  const LogitsProcessors processors(config, prompt_length, processor_mask);
  if (*config.num_beams > 1) return beam_search(model, plan, processors);
  return {greedy_or_sample(model, plan, processors), at::Tensor()};
}

/// An encoder-decoder seen as a decoder over its decoder tokens: the encoder's output (computed
/// once, repeated for the beams) and the cross-attention's cache travel with it.
class EncoderDecoderSteps : public CausalLanguageModel {
 public:
  EncoderDecoderSteps(Seq2SeqLanguageModel& model, at::Tensor encoder_hidden,
                      at::Tensor encoder_mask)
      : model_(model),
        encoder_hidden_(std::move(encoder_hidden)),
        encoder_mask_(std::move(encoder_mask)) {}

  at::Tensor next_token_logits(const at::Tensor& input_ids, const at::Tensor&, const at::Tensor&,
                               KeyValueCache& cache) override {
    // A fresh cache (the first step, or every step without use_cache) recomputes the
    // cross-attention's keys and values too. Beam search reorders rows within a prompt only,
    // whose encoder rows are equal, so this cache needs no reordering.
    if (cache.length() == 0) cross_.clear();
    return model_.decoder_next_token_logits(input_ids, encoder_hidden_, encoder_mask_, cache,
                                            cross_);
  }
  int64_t num_decoder_layers() const override { return model_.num_decoder_layers(); }
  std::optional<int64_t> max_position_embeddings() const override {
    return model_.max_position_embeddings();
  }

 private:
  Seq2SeqLanguageModel& model_;
  at::Tensor encoder_hidden_, encoder_mask_;
  CrossAttentionCache cross_;
};

}  // namespace

GenerateOutput generate(CausalLanguageModel& model, const at::Tensor& input_ids,
                        const at::Tensor& attention_mask, const GenerationConfig& call,
                        const GenerationConfig& model_defaults,
                        std::optional<at::Generator> generator) {
  check_inputs(input_ids, attention_mask);
  at::NoGradGuard no_grad;  // as transformers' @torch.no_grad()
  DecodingPlan plan;
  const bool default_max_length =
      prepare_settings(plan, call, model_defaults, std::move(generator), input_ids.size(0));

  // The attention mask (given, or inferred) gives the position ids; one that keeps every token
  // is dropped, as transformers drops it (the model then needs no mask).
  const at::Tensor ids = input_ids.to(at::kLong);
  at::Tensor mask =
      attention_mask.defined() ? attention_mask.to(at::kLong) : infer_attention_mask(ids, plan);
  const at::Tensor positions = (mask.cumsum(-1) - 1).masked_fill(mask.eq(0), 0);
  if (mask.eq(1).all().item<bool>()) mask = at::Tensor();
  plan.input_ids = expanded(ids, plan.config);
  plan.attention_mask = expanded(mask, plan.config);
  plan.position_ids = expanded(positions, plan.config);
  return decode(model, plan, default_max_length, ids.size(1), plan.attention_mask);
}

GenerateOutput generate(Seq2SeqLanguageModel& model, const at::Tensor& input_ids,
                        const at::Tensor& attention_mask, const GenerationConfig& call,
                        const GenerationConfig& model_defaults,
                        std::optional<at::Generator> generator) {
  check_inputs(input_ids, attention_mask);
  at::NoGradGuard no_grad;
  DecodingPlan plan;
  const bool default_max_length =
      prepare_settings(plan, call, model_defaults, std::move(generator), input_ids.size(0));
  // _prepare_special_tokens: decoder_start_token_id, else bos_token_id.
  const std::optional<int64_t> start = plan.config.decoder_start_token_id
                                           ? plan.config.decoder_start_token_id
                                           : plan.config.bos_token_id;
  if (!start)
    throw ArgumentError(
        "generation: decoder_start_token_id or bos_token_id has to be set for encoder-decoder "
        "generation (generation_config.json or config.json)");
  // The encoder runs once on the prompts as given (transformers infers no mask for it).
  const at::Tensor ids = input_ids.to(at::kLong);
  const at::Tensor mask = attention_mask.defined() ? attention_mask.to(at::kLong) : at::Tensor();
  const at::Tensor encoder_hidden = model.encode(ids, mask);
  EncoderDecoderSteps steps(model, expanded(encoder_hidden, plan.config),
                            expanded(mask, plan.config));
  // Each row's decoder starts from decoder_start_token_id alone.
  const int64_t rows = expanded(ids, plan.config).size(0);
  plan.input_ids = at::full({rows, 1}, *start, ids.options());
  plan.position_ids = at::zeros({rows, 1}, ids.options());  // the decoder counts them itself
  return decode(steps, plan, default_max_length, /*prompt_length=*/1,
                /*processor_mask=*/at::Tensor());
}

}  // namespace ctrainer::generation
