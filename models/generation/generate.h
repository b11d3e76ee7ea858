#pragma once
/// \file generate() for decoder-only language models, as transformers' GenerationMixin.generate
/// runs them: greedy search, multinomial sampling, beam search and beam sampling, with a
/// key/value cache so that each new token costs one step of the model.
#include <cstdint>
#include <optional>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <ctrainer/models/causal_lm.h>
#include <ctrainer/models/generation/generation_config.h>
#include <ctrainer/models/seq2seq_lm.h>

namespace ctrainer::generation {

struct GenerateOutput {
  /// [batch * num_return_sequences, length]: each row's prompt (with its padding), then the
  /// generated tokens; rows that stopped early are filled as transformers fills them (pad_token_id
  /// after an eos for greedy search and sampling; beam search's fill value otherwise).
  at::Tensor sequences;
  /// Beam search only: the length-penalised sum of log-probabilities of each returned sequence
  /// (transformers' sequences_scores); undefined for greedy search and sampling.
  at::Tensor sequence_scores;
};

/// Continues each row of `input_ids` [batch, prompt_length] (left-padded when rows differ in
/// length) as `model.generate(input_ids, attention_mask=..., **call)` does in transformers 5.
///
/// - Settings: `call` over `model_defaults` (the model's generation_config.json, or
///   GenerationConfig::from_model_config of its config.json) over transformers' global defaults.
/// - Lengths: max_new_tokens gives max_length = prompt_length + max_new_tokens; an unset
///   max_length is 20 new tokens, capped by the model's max_position_embeddings; min_new_tokens
///   gives min_length the same way.
/// - Special tokens: pad_token_id defaults to the first eos_token_id. Without an
///   `attention_mask` (undefined) one is inferred from pad_token_id when the prompt holds it and
///   it is not an eos id; position ids count the tokens of each row (padding excluded).
/// - Strategy: num_beams 1 is greedy search (do_sample false) or sampling (true); num_beams > 1
///   is beam search or, with do_sample, beam sampling. Draws use `generator` (default: the
///   global CPU generator), the same draws as torch.multinomial with that generator.
///
/// The model runs as it is: put it in eval mode first (transformers' from_pretrained returns
/// models in eval mode; a freshly built torch module is in training mode, with dropout on).
/// Gradients are off inside. Throws ArgumentError for settings transformers refuses
/// (num_return_sequences above 1 in greedy search or above num_beams, a prompt not shorter than
/// max_length) and for inputs of the wrong shape.
GenerateOutput generate(CausalLanguageModel& model, const at::Tensor& input_ids,
                        const at::Tensor& attention_mask, const GenerationConfig& call,
                        const GenerationConfig& model_defaults,
                        std::optional<at::Generator> generator = std::nullopt);

/// generate() for an encoder-decoder (T5, ...), as transformers runs it: the encoder once on
/// `input_ids` [batch, source_length] with `attention_mask` (undefined: every token attended;
/// no mask is inferred for the encoder, as in transformers), then the decoder from
/// decoder_start_token_id (else bos_token_id; neither is an ArgumentError) with the same
/// strategies, lengths counted on the decoder's tokens (the start token is the prompt: an unset
/// max_length is 21) and a cache of the self- and cross-attention. The sequences are the
/// decoder's: the start token, then the generated tokens.
GenerateOutput generate(Seq2SeqLanguageModel& model, const at::Tensor& input_ids,
                        const at::Tensor& attention_mask, const GenerationConfig& call,
                        const GenerationConfig& model_defaults,
                        std::optional<at::Generator> generator = std::nullopt);

}  // namespace ctrainer::generation
