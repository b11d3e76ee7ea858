// transformers 5.24's GenerationMixin._sample, step for step: the processed scores of the last
// position, argmax or one torch.multinomial draw, pad after an eos, stop when every row has hit
// max_length or an eos.
#include <ATen/ATen.h>

#include <ctrainer/models/generation/decoding.h>

namespace ctrainer::generation {

at::Tensor greedy_or_sample(CausalLanguageModel& model, const DecodingPlan& plan,
                            const LogitsProcessors& processors) {
  DecoderSteps steps(model, plan);
  const bool do_sample = plan.config.do_sample.value_or(false);
  const bool has_eos = !plan.eos_token_ids.empty();
  at::Tensor sequences = plan.input_ids;
  const auto long_options = sequences.options().dtype(at::kLong);
  const at::Tensor eos =
      at::tensor(plan.eos_token_ids, at::TensorOptions().dtype(at::kLong)).to(sequences.device());
  at::Tensor unfinished = at::ones({sequences.size(0)}, long_options);
  while (true) {
    const at::Tensor scores = processors(sequences, steps.next_token_logits(sequences));
    at::Tensor next_tokens = do_sample ? at::multinomial(at::softmax(scores, -1), 1,
                                                         /*replacement=*/false, plan.generator)
                                             .squeeze(1)
                                       : scores.argmax(-1);
    // Rows that stopped get padding (transformers sets pad_token_id to eos whenever eos is set).
    if (has_eos) next_tokens = next_tokens * unfinished + *plan.pad_token_id * (1 - unfinished);
    sequences = at::cat({sequences, next_tokens.unsqueeze(1)}, -1);
    // MaxLengthCriteria and EosTokenCriteria.
    at::Tensor stopped = at::full({sequences.size(0)}, sequences.size(1) >= plan.max_length,
                                  long_options.dtype(at::kBool));
    if (has_eos) stopped = stopped.logical_or(at::isin(next_tokens, eos));
    unfinished = unfinished.logical_and(stopped.logical_not()).to(at::kLong);
    if (unfinished.max().item<int64_t>() == 0) break;
  }
  return sequences;
}

}  // namespace ctrainer::generation
