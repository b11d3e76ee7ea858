#pragma once
/// \file What one generation step does to the next-token scores before a token is chosen, as
/// transformers' GenerationMixin._get_logits_processor builds its LogitsProcessorList from a
/// GenerationConfig: the processors in its order (repetition penalty, no-repeat n-grams, bad
/// words, minimum lengths, forced BOS/EOS, invalid values, suppressed tokens), then with
/// do_sample the warpers (temperature, top-k, top-p, min-p).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include <ctrainer/models/generation/generation_config.h>

namespace ctrainer::generation {

class LogitsProcessors {
 public:
  /// The steps `config` asks for. `config` must be resolved (with_global_defaults()): unset
  /// fields are read as off. `prompt_length` is the length of the input_ids generation starts
  /// from (min_new_tokens and begin_suppress_tokens count from it); `attention_mask` ([batch,
  /// prompt_length], or undefined) lets the repetition penalty skip left padding, as transformers
  /// passes the prompt's mask. Throws ArgumentError for values transformers' processors refuse.
  LogitsProcessors(const GenerationConfig& config, int64_t prompt_length,
                   const at::Tensor& attention_mask = {});

  /// The scores [batch, vocab] for the next token after `input_ids` [batch, length], processed.
  at::Tensor operator()(const at::Tensor& input_ids, const at::Tensor& scores) const;

  /// transformers' class name of each step, in order (e.g. "TopKLogitsWarper").
  std::vector<std::string> names() const;

 private:
  using Step = std::function<at::Tensor(const at::Tensor& input_ids, const at::Tensor& scores)>;
  std::vector<std::pair<std::string, Step>> steps_;
};

}  // namespace ctrainer::generation
