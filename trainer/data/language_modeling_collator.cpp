#include <ctrainer/trainer/data/language_modeling_collator.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/logging.h>

namespace ctrainer {
namespace {

constexpr int64_t kIgnoreIndex = -100;

/// splitmix64's finaliser: mixes one more value into a seed.
uint64_t mix(uint64_t seed, uint64_t value) {
  uint64_t z = seed ^ (value + 0x9E3779B97F4A7C15ULL + (seed << 6) + (seed >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void check_probability(double value, const char* name) {
  if (!(value >= 0.0 && value <= 1.0))
    throw ArgumentError(fmt::format(
        "DataCollatorForLanguageModeling: {} should be between 0 and 1, got {}", name, value));
}

/// transformers' _calc_word_ids_and_prob_mask + _whole_word_mask: a token starts a word when it
/// is not special and does not continue the previous token's characters (or follows a special
/// one); every token of a word whose first token was drawn is masked.
struct WordIds {
  at::Tensor word_ids;  ///< [B, T], -1 for special tokens
  at::Tensor not_word_start;
};

WordIds word_ids_of(const at::Tensor& offsets, const at::Tensor& special) {
  const at::Tensor starts = offsets.select(2, 0);
  at::Tensor previous_ends = at::roll(offsets.select(2, 1), 1, 1);
  previous_ends.select(1, 0).fill_(-1);
  at::Tensor previous_special = at::roll(special, 1, 1);
  previous_special.select(1, 0).fill_(false);
  const at::Tensor new_word =
      special.logical_not().logical_and(starts.ne(previous_ends).logical_or(previous_special));
  at::Tensor word_ids = new_word.to(at::kLong).cumsum(1);
  word_ids.masked_fill_(special, -1);
  return {word_ids, new_word.logical_not()};
}

at::Tensor whole_words(const at::Tensor& word_ids, const at::Tensor& chosen) {
  const at::Tensor valid = word_ids.ne(-1);
  const at::Tensor same_word = word_ids.unsqueeze(2)
                                   .eq(word_ids.unsqueeze(1))
                                   .logical_and(valid.unsqueeze(2))
                                   .logical_and(valid.unsqueeze(1));
  return same_word.logical_and(chosen.unsqueeze(1)).any(2);
}

}  // namespace

MaskedTokens mask_tokens(const at::Tensor& input_ids, const at::Tensor& no_mask,
                         const at::Tensor& offset_mapping,
                         const LanguageModelingCollatorOptions& options, at::Generator generator) {
  at::Tensor inputs = input_ids.clone();
  at::Tensor labels = input_ids.clone();
  const auto shape = labels.sizes();
  const auto probabilities = [&](double p) { return at::full(shape, p, at::kFloat); };
  at::Tensor probability = probabilities(options.mlm_probability);
  WordIds words;
  if (options.whole_word_mask) {
    if (!offset_mapping.defined())
      throw std::invalid_argument(
          "DataCollatorForLanguageModeling: whole_word_mask needs each example's "
          "offset_mapping (tokenize with return_offsets_mapping)");
    words = word_ids_of(offset_mapping.to(at::kLong), no_mask);
    probability.masked_fill_(words.not_word_start, 0.0);
  } else {
    probability.masked_fill_(no_mask, 0.0);
  }
  at::Tensor masked = at::bernoulli(probability, generator).to(at::kBool);
  if (options.whole_word_mask) masked = whole_words(words.word_ids, masked);
  labels.masked_fill_(masked.logical_not(), kIgnoreIndex);

  const at::Tensor replaced = at::bernoulli(probabilities(options.mask_replace_prob), generator)
                                  .to(at::kBool)
                                  .logical_and(masked);
  inputs.masked_fill_(replaced, *options.mask_token_id);
  if (options.mask_replace_prob == 1.0 || options.random_replace_prob == 0.0)
    return {inputs, labels};

  // The random share of what is left after the mask token (0.1 / 0.2 = 0.5 by default).
  const double random_share = options.random_replace_prob / (1.0 - options.mask_replace_prob);
  const at::Tensor randomised = at::bernoulli(probabilities(random_share), generator)
                                    .to(at::kBool)
                                    .logical_and(masked)
                                    .logical_and(replaced.logical_not());
  const at::Tensor random_words =
      at::randint(options.vocabulary_size, shape, generator, at::TensorOptions().dtype(at::kLong));
  inputs = at::where(randomised, random_words.to(inputs.scalar_type()), inputs);
  return {inputs, labels};
}

DataCollatorForLanguageModeling::DataCollatorForLanguageModeling(
    LanguageModelingCollatorOptions options)
    : options_(std::move(options)) {
  if (options_.mlm) {
    if (!options_.mask_token_id)
      throw ArgumentError(
          "This tokenizer does not have a mask token which is necessary for masked language "
          "modeling. Use mlm=false (causal language modeling) or a tokenizer with a mask token");
    check_probability(options_.mlm_probability, "mlm_probability");
  } else if (options_.whole_word_mask) {
    throw ArgumentError(
        "DataCollatorForLanguageModeling: whole word masking can only be used with mlm=true");
  }
  if (options_.mask_replace_prob + options_.random_replace_prob > 1.0)
    throw ArgumentError(
        "DataCollatorForLanguageModeling: the sum of mask_replace_prob and random_replace_prob "
        "should not exceed 1");
  check_probability(options_.mask_replace_prob, "mask_replace_prob");
  check_probability(options_.random_replace_prob, "random_replace_prob");
  if (options_.whole_word_mask && options_.mask_replace_prob < 1.0) {
    logging::logger()->warn(
        "Random token replacement is not supported with whole word masking. Setting "
        "mask_replace_prob to 1.");
    options_.mask_replace_prob = 1.0;
    options_.random_replace_prob = 0.0;
  }
  if (!options_.pad_token_id)
    throw ArgumentError(
        "DataCollatorForLanguageModeling: the tokenizer has no pad token, and batches are "
        "padded; give it one (for a causal LM, often its eos token)");
  if (options_.mlm && options_.random_replace_prob > 0.0 && options_.vocabulary_size < 1)
    throw ArgumentError("DataCollatorForLanguageModeling: vocabulary_size must be >= 1");
  if (options_.pad_to_multiple_of && *options_.pad_to_multiple_of < 1)
    throw ArgumentError("DataCollatorForLanguageModeling: pad_to_multiple_of must be >= 1");
}

Batch DataCollatorForLanguageModeling::operator()(const std::vector<Example>& examples) const {
  std::lock_guard<std::mutex> lock(stream_mutex_);
  if (!stream_) {
    stream_ = at::make_generator<at::CPUGeneratorImpl>(
        options_.seed.value_or(at::detail::getDefaultCPUGenerator().current_seed()));
  }
  return build(examples, *stream_);
}

Batch DataCollatorForLanguageModeling::collate(const std::vector<Example>& examples,
                                               const BatchOrigin& origin) const {
  uint64_t seed = mix(options_.seed.value_or(at::detail::getDefaultCPUGenerator().current_seed()),
                      static_cast<uint64_t>(origin.epoch));
  for (int64_t index : origin.dataset_indices) seed = mix(seed, static_cast<uint64_t>(index));
  return build(examples, at::make_generator<at::CPUGeneratorImpl>(seed));
}

Batch DataCollatorForLanguageModeling::build(const std::vector<Example>& examples,
                                             at::Generator generator) const {
  if (examples.empty()) return {};
  Batch batch;
  for (const std::string& key : examples.front().keys()) {
    if (key == "labels") continue;  // replaced below
    std::vector<at::Tensor> rows;
    int64_t longest = 0;
    bool ragged = false;
    for (const Example& example : examples) {
      if (!example.contains(key))
        throw std::invalid_argument("DataCollatorForLanguageModeling: an example lacks key '" +
                                    key + "'");
      rows.push_back(example.at(key));
      longest = std::max(longest, rows.back().dim() > 0 ? rows.back().size(0) : 0);
      ragged = ragged || rows.back().sizes() != rows.front().sizes();
    }
    const bool sequence = key == "input_ids" || key == "attention_mask" ||
                          key == "token_type_ids" || key == "special_tokens_mask" ||
                          key == "offset_mapping";
    if (!sequence) {
      if (ragged)
        throw std::invalid_argument("DataCollatorForLanguageModeling: key '" + key +
                                    "' has different shapes across examples");
      batch.set(key, at::stack(rows));
      continue;
    }
    int64_t length = longest;
    if (options_.pad_to_multiple_of) {
      const int64_t m = *options_.pad_to_multiple_of;
      length = (length + m - 1) / m * m;
    }
    batch.set(key, pad_sequences(rows, length, padding_value_for(key, *options_.pad_token_id),
                                 options_.pad_left));
  }
  if (!batch.contains("input_ids"))
    throw std::invalid_argument(
        "DataCollatorForLanguageModeling: the examples have no 'input_ids'");
  const at::Tensor input_ids = batch.at("input_ids");
  at::Tensor special;
  if (batch.contains("special_tokens_mask")) {
    special = batch.at("special_tokens_mask").to(at::kBool);
    batch.erase("special_tokens_mask");
  } else {
    // HF's get_special_tokens_mask: all_special_ids, which hold the pad token.
    std::vector<int64_t> special_ids = options_.special_token_ids;
    special_ids.push_back(*options_.pad_token_id);
    special = at::isin(input_ids, at::tensor(special_ids, at::kLong));
  }
  at::Tensor offsets;
  if (batch.contains("offset_mapping")) {
    offsets = batch.at("offset_mapping");
    batch.erase("offset_mapping");
  }
  if (options_.mlm) {
    MaskedTokens masked = mask_tokens(input_ids, special, offsets, options_, generator);
    batch.set("input_ids", masked.input_ids);
    batch.set("labels", masked.labels);
  } else {
    batch.set("labels", input_ids.masked_fill(input_ids.eq(*options_.pad_token_id), kIgnoreIndex));
  }
  return batch;
}

}  // namespace ctrainer
