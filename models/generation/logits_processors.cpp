// Each step computes what its transformers 5.24 class computes, with the same tensor operations
// where the order of floating-point work matters (top-p's ascending sort and cumulative sum,
// min-p's softmax), so that a sampled token can match transformers' draw.
#include <ctrainer/models/generation/logits_processors.h>

#include <algorithm>
#include <limits>
#include <map>

#include <ATen/ATen.h>

#include <ctrainer/core/errors.h>

namespace ctrainer::generation {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

at::Tensor id_tensor(const std::vector<int64_t>& ids, const at::Tensor& like) {
  return at::tensor(ids, at::TensorOptions().dtype(at::kLong)).to(like.device());
}

/// Positions of `ids` in a vocabulary of `scores`' size, as a bool mask [vocab].
at::Tensor vocab_mask(const at::Tensor& scores, const std::vector<int64_t>& ids) {
  const auto vocab = at::arange(scores.size(-1), scores.options().dtype(at::kLong));
  return at::isin(vocab, id_tensor(ids, scores));
}

at::Tensor forbid(const at::Tensor& scores, const std::vector<int64_t>& ids) {
  return at::where(vocab_mask(scores, ids), -kInf, scores);
}

/// RepetitionPenaltyLogitsProcessor: the score of every token already in the row is divided
/// by the penalty (multiplied when negative); left padding of the prompt does not count.
at::Tensor repetition_penalty(const at::Tensor& input_ids, const at::Tensor& scores, double penalty,
                              const at::Tensor& padding_lengths) {
  const int64_t vocab = scores.size(-1);
  at::Tensor ids = input_ids;
  if (padding_lengths.defined()) {
    const auto positions = at::arange(ids.size(1), ids.options());
    ids = ids.masked_fill(positions.unsqueeze(0) < padding_lengths.unsqueeze(1), vocab);
  }
  ids = ids.clamp_max(vocab);
  const auto padded = at::constant_pad_nd(scores, {0, 1});
  auto score = padded.gather(1, ids);
  score = at::where(score < 0, score * penalty, score / penalty);
  return padded.scatter(1, ids, score).slice(-1, 0, vocab);
}

/// NoRepeatNGramLogitsProcessor: a token that would complete an n-gram already in the row is
/// forbidden.
at::Tensor no_repeat_ngram(const at::Tensor& input_ids, const at::Tensor& scores, int64_t n) {
  const int64_t length = input_ids.size(-1);
  if (length < n) return scores;
  const int64_t vocab = scores.size(-1);
  const auto prefix = input_ids.slice(1, length + 1 - n);
  const auto windows = input_ids.unfold(1, n, 1);
  const auto matches = (windows.slice(-1, 0, n - 1) == prefix.unsqueeze(1)).all(-1);
  auto banned = at::zeros({scores.size(0), vocab + 1}, scores.options().dtype(at::kBool));
  banned.scatter_(1,
                  at::where(matches, windows.select(-1, n - 1).clamp_max(vocab),
                            at::full_like(matches, vocab, matches.options().dtype(at::kLong))),
                  true);
  return scores.masked_fill(banned.slice(1, 0, vocab), -kInf);
}

/// NoBadWordsLogitsProcessor (a SequenceBiasLogitsProcessor of -inf): a one-token word is always
/// forbidden; a longer one when the row ends with all but its last token. Words that are just
/// an eos token are dropped, as transformers drops them.
class BadWords {
 public:
  BadWords(const std::vector<std::vector<int64_t>>& words, const std::vector<int64_t>& eos) {
    std::map<std::vector<int64_t>, bool> unique;  // transformers keys them by tuple
    for (const auto& word : words) {
      const bool just_eos = word.size() == 1 && std::count(eos.begin(), eos.end(), word[0]) > 0;
      if (!just_eos) unique[word] = true;
    }
    for (const auto& [word, unused] : unique) {
      (void)unused;
      if (word.size() == 1)
        single_.push_back(word[0]);
      else
        longer_.push_back(word);
    }
  }

  at::Tensor operator()(const at::Tensor& input_ids, const at::Tensor& scores) const {
    const int64_t vocab = scores.size(-1);
    for (const auto& word : longer_)
      for (const int64_t id : word) check(id, vocab);
    for (const int64_t id : single_) check(id, vocab);
    auto bias = at::zeros_like(scores);
    if (!single_.empty()) {
      auto single_bias = at::zeros({vocab}, scores.options().dtype(at::kFloat));
      single_bias.index_fill_(0, id_tensor(single_, scores), -kInf);
      bias += single_bias;
    }
    const int64_t length = input_ids.size(1);
    for (const auto& word : longer_) {
      const auto prefix_length = static_cast<int64_t>(word.size()) - 1;
      if (prefix_length > length) continue;
      const std::vector<int64_t> prefix(word.begin(), word.end() - 1);
      const auto matching =
          (input_ids.slice(1, length - prefix_length) == id_tensor(prefix, scores)).all(1);
      const auto added = at::where(matching, -kInf, 0.0).to(bias.scalar_type()).unsqueeze(1);
      bias.index_add_(1, id_tensor({word.back()}, scores), added);
    }
    return scores + bias;
  }

 private:
  static void check(int64_t id, int64_t vocab) {
    if (id >= vocab)
      throw ArgumentError("bad_words_ids: token id " + std::to_string(id) +
                          " is outside the model's vocabulary of " + std::to_string(vocab));
  }
  std::vector<int64_t> single_;
  std::vector<std::vector<int64_t>> longer_;
};

/// ForcedBOSTokenLogitsProcessor / ForcedEOSTokenLogitsProcessor: only `ids` stay possible.
at::Tensor force(const at::Tensor& scores, const std::vector<int64_t>& ids, const char* key) {
  for (const int64_t id : ids)
    if (id >= scores.size(-1))
      throw ArgumentError(std::string(key) + ": token id " + std::to_string(id) +
                          " is outside the model's vocabulary of " +
                          std::to_string(scores.size(-1)));
  auto forced = at::full_like(scores, -kInf);
  forced.index_fill_(1, id_tensor(ids, scores), 0.0);
  return forced;
}

/// InfNanRemoveLogitsProcessor.
at::Tensor remove_invalid(const at::Tensor& scores) {
  auto out = scores.clone();
  out.masked_fill_(out != out, 0.0);
  const double max = out.scalar_type() == at::kDouble ? std::numeric_limits<double>::max()
                                                      : std::numeric_limits<float>::max();
  out.masked_fill_(out == kInf, max);
  out.masked_fill_(out == -kInf, -max);
  return out;
}

at::Tensor top_k(const at::Tensor& scores, int64_t k) {
  k = std::min(k, scores.size(-1));
  const auto kth = std::get<0>(at::topk(scores, k)).select(-1, k - 1).unsqueeze(-1);
  return scores.masked_fill(scores < kth, -kInf);
}

at::Tensor top_p(const at::Tensor& scores, double p, int64_t min_tokens_to_keep) {
  const auto [sorted_logits, sorted_indices] = at::sort(scores, /*dim=*/-1, /*descending=*/false);
  const auto cumulative = sorted_logits.softmax(-1).cumsum(-1);
  auto remove = cumulative <= (1 - p);
  remove.slice(-1, remove.size(-1) - std::min(min_tokens_to_keep, remove.size(-1))).fill_(false);
  const auto indices_to_remove = remove.scatter(1, sorted_indices, remove);
  return scores.masked_fill(indices_to_remove, -kInf);
}

at::Tensor min_p(const at::Tensor& scores, double p, int64_t min_tokens_to_keep) {
  const auto probs = at::softmax(scores, -1);
  const auto top = probs.amax(-1, /*keepdim=*/true);
  auto remove = probs < top * p;
  const int64_t k = std::min(min_tokens_to_keep, probs.size(-1));
  remove.scatter_(-1, std::get<1>(at::topk(probs, k, -1)), false);
  return scores.masked_fill(remove, -kInf);
}

}  // namespace

LogitsProcessors::LogitsProcessors(const GenerationConfig& c, int64_t prompt_length,
                                   const at::Tensor& attention_mask) {
  const std::vector<int64_t> eos = c.eos_token_id ? c.eos_token_id->ids : std::vector<int64_t>{};
  if (c.repetition_penalty && *c.repetition_penalty != 1.0) {
    const double penalty = *c.repetition_penalty;
    if (!(penalty > 0))
      throw ArgumentError("repetition_penalty must be above 0 (1.0 turns it off), got " +
                          std::to_string(penalty));
    const at::Tensor padding_lengths =
        attention_mask.defined() ? (attention_mask != 0).to(at::kInt).argmax(1) : at::Tensor();
    steps_.emplace_back("RepetitionPenaltyLogitsProcessor",
                        [penalty, padding_lengths](const at::Tensor& ids, const at::Tensor& s) {
                          return repetition_penalty(ids, s, penalty, padding_lengths);
                        });
  }
  if (c.no_repeat_ngram_size && *c.no_repeat_ngram_size > 0) {
    const int64_t n = *c.no_repeat_ngram_size;
    steps_.emplace_back(
        "NoRepeatNGramLogitsProcessor",
        [n](const at::Tensor& ids, const at::Tensor& s) { return no_repeat_ngram(ids, s, n); });
  }
  if (c.bad_words_ids)
    steps_.emplace_back("NoBadWordsLogitsProcessor", BadWords(*c.bad_words_ids, eos));
  if (c.min_length && *c.min_length > 0 && !eos.empty()) {
    const int64_t min_length = *c.min_length;
    steps_.emplace_back("MinLengthLogitsProcessor",
                        [min_length, eos](const at::Tensor& ids, const at::Tensor& s) {
                          return ids.size(-1) < min_length ? forbid(s, eos) : s.clone();
                        });
  }
  if (c.min_new_tokens && *c.min_new_tokens > 0 && !eos.empty()) {
    const int64_t min_new = *c.min_new_tokens;
    steps_.emplace_back("MinNewTokensLengthLogitsProcessor",
                        [min_new, prompt_length, eos](const at::Tensor& ids, const at::Tensor& s) {
                          return ids.size(-1) - prompt_length < min_new ? forbid(s, eos)
                                                                        : s.clone();
                        });
  }
  if (c.forced_bos_token_id) {
    const int64_t bos = *c.forced_bos_token_id;
    steps_.emplace_back("ForcedBOSTokenLogitsProcessor",
                        [bos](const at::Tensor& ids, const at::Tensor& s) {
                          return ids.size(-1) == 1 ? force(s, {bos}, "forced_bos_token_id") : s;
                        });
  }
  if (c.forced_eos_token_id) {
    if (!c.max_length)
      throw ArgumentError("forced_eos_token_id needs max_length (the length where eos is forced)");
    const int64_t max_length = *c.max_length;
    const std::vector<int64_t> forced = c.forced_eos_token_id->ids;
    steps_.emplace_back("ForcedEOSTokenLogitsProcessor", [max_length, forced](const at::Tensor& ids,
                                                                              const at::Tensor& s) {
      return ids.size(-1) == max_length - 1 ? force(s, forced, "forced_eos_token_id") : s;
    });
  }
  if (c.remove_invalid_values.value_or(false))
    steps_.emplace_back("InfNanRemoveLogitsProcessor",
                        [](const at::Tensor&, const at::Tensor& s) { return remove_invalid(s); });
  if (c.suppress_tokens) {
    const std::vector<int64_t> suppressed = *c.suppress_tokens;
    steps_.emplace_back(
        "SuppressTokensLogitsProcessor",
        [suppressed](const at::Tensor&, const at::Tensor& s) { return forbid(s, suppressed); });
  }
  if (c.begin_suppress_tokens) {
    // transformers begins one token later when a forced BOS token takes the first position.
    const int64_t begin =
        prompt_length > 1 || !c.forced_bos_token_id ? prompt_length : prompt_length + 1;
    const std::vector<int64_t> suppressed = *c.begin_suppress_tokens;
    steps_.emplace_back("SuppressTokensAtBeginLogitsProcessor",
                        [begin, suppressed](const at::Tensor& ids, const at::Tensor& s) {
                          return ids.size(-1) == begin ? forbid(s, suppressed) : s;
                        });
  }
  if (!c.do_sample.value_or(false)) return;
  // With beams, at least one token besides the eos tokens survives each warper.
  const int64_t keep =
      c.num_beams.value_or(1) > 1 ? (eos.empty() ? 2 : static_cast<int64_t>(eos.size()) + 1) : 1;
  if (c.temperature && *c.temperature != 1.0) {
    const double temperature = *c.temperature;
    if (!(temperature > 0))
      throw ArgumentError("temperature must be above 0 when sampling, got " +
                          std::to_string(temperature) +
                          " (for greedy decoding set do_sample to false)");
    steps_.emplace_back(
        "TemperatureLogitsWarper",
        [temperature](const at::Tensor&, const at::Tensor& s) { return s / temperature; });
  }
  if (c.top_k && *c.top_k != 0) {
    const int64_t k = std::max(*c.top_k, keep);
    steps_.emplace_back("TopKLogitsWarper",
                        [k](const at::Tensor&, const at::Tensor& s) { return top_k(s, k); });
  }
  if (c.top_p && *c.top_p < 1.0) {
    const double p = *c.top_p;
    if (p < 0) throw ArgumentError("top_p must be within [0, 1], got " + std::to_string(p));
    steps_.emplace_back("TopPLogitsWarper", [p, keep](const at::Tensor&, const at::Tensor& s) {
      return top_p(s, p, keep);
    });
  }
  if (c.min_p) {
    const double p = *c.min_p;
    if (!(p >= 0 && p <= 1))
      throw ArgumentError("min_p must be within [0, 1], got " + std::to_string(p));
    steps_.emplace_back("MinPLogitsWarper", [p, keep](const at::Tensor&, const at::Tensor& s) {
      return min_p(s, p, keep);
    });
  }
}

at::Tensor LogitsProcessors::operator()(const at::Tensor& input_ids,
                                        const at::Tensor& scores) const {
  at::Tensor out = scores;
  for (const auto& [name, step] : steps_) out = step(input_ids, out);
  return out;
}

std::vector<std::string> LogitsProcessors::names() const {
  std::vector<std::string> names;
  for (const auto& [name, step] : steps_) names.push_back(name);
  return names;
}

}  // namespace ctrainer::generation
