#pragma once
/// \file What generate()'s decoding loops share (internal to models/generation): the prepared
/// inputs and settings, and the model steps that feed each loop's new tokens through the cache.
#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <ctrainer/models/causal_lm.h>
#include <ctrainer/models/generation/generate.h>
#include <ctrainer/models/generation/generation_config.h>
#include <ctrainer/models/generation/logits_processors.h>
#include <ctrainer/models/kv_cache.h>

namespace ctrainer::generation {

/// generate()'s inputs after transformers' preparation: rows repeated for beams or returned
/// sequences, lengths and special tokens resolved.
struct DecodingPlan {
  GenerationConfig config;             ///< resolved: every field set (global defaults filled in)
  int64_t batch_size = 0;              ///< prompts, before the rows were repeated
  int64_t max_length = 0;              ///< prompt + generated tokens, at most
  std::vector<int64_t> eos_token_ids;  ///< empty: no eos stops a row
  std::optional<int64_t> pad_token_id;
  at::Tensor input_ids;       ///< [rows, prompt_length]
  at::Tensor attention_mask;  ///< [rows, prompt_length], or undefined when every token counts
  at::Tensor position_ids;    ///< [rows, prompt_length]
  std::optional<at::Generator> generator;
};

/// Runs the model over the tokens of a growing sequence that it has not seen yet: the whole
/// prompt first (the prefill), then one token per step, keeping the attention mask and position
/// ids as transformers' _update_model_kwargs_for_generation extends them. Without use_cache the
/// cache is rebuilt at every step, so each step runs the model over the whole sequence.
class DecoderSteps {
 public:
  DecoderSteps(CausalLanguageModel& model, const DecodingPlan& plan);

  /// The fp32 next-token logits [rows, vocab] after `sequences` [rows, length], whose first
  /// length - 1 tokens (all but the prompt at the first call) went through earlier calls.
  at::Tensor next_token_logits(const at::Tensor& sequences);

  /// Beam search: the cache keeps rows `rows` in that order.
  void select_rows(const at::Tensor& rows) { cache_.select_rows(rows); }

 private:
  CausalLanguageModel& model_;
  bool use_cache_;
  KeyValueCache cache_;
  at::Tensor attention_mask_, position_ids_;
  bool prefilled_ = false;
};

/// transformers' _sample: greedy search or multinomial sampling. Returns the sequences.
at::Tensor greedy_or_sample(CausalLanguageModel& model, const DecodingPlan& plan,
                            const LogitsProcessors& processors);

/// transformers' _beam_search (with do_sample: beam sampling).
GenerateOutput beam_search(CausalLanguageModel& model, const DecodingPlan& plan,
                           const LogitsProcessors& processors);

}  // namespace ctrainer::generation
