#include <ctrainer/trainer/data/padding_collator.h>

#include <stdexcept>
#include <string>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

/// Keys padded even when every example happens to have the same length (so that
/// pad_to_multiple_of and max_length apply to them).
bool is_sequence_key(const std::string& key) {
  return key == "input_ids" || key == "token_type_ids" || key == "attention_mask" ||
         key == "special_tokens_mask";
}

}  // namespace

DataCollatorWithPadding::DataCollatorWithPadding(PaddingCollatorOptions options)
    : options_(options) {
  if (options_.max_length && *options_.max_length < 1)
    throw ArgumentError("DataCollatorWithPadding: max_length must be >= 1");
  if (options_.pad_to_multiple_of && *options_.pad_to_multiple_of < 1)
    throw ArgumentError("DataCollatorWithPadding: pad_to_multiple_of must be >= 1");
}

Batch DataCollatorWithPadding::operator()(const std::vector<Example>& examples) const {
  Batch batch;
  if (examples.empty()) return batch;
  const int64_t n = static_cast<int64_t>(examples.size());
  for (const auto& key : examples.front().keys()) {
    std::vector<at::Tensor> parts;
    parts.reserve(examples.size());
    bool ragged = false;
    for (const auto& ex : examples) {
      if (!ex.contains(key))
        throw std::invalid_argument("DataCollatorWithPadding: an example lacks key '" + key + "'");
      parts.push_back(ex.at(key));
      ragged = ragged || parts.back().sizes() != parts.front().sizes();
    }
    const bool sequence = parts.front().dim() == 1 && (is_sequence_key(key) || ragged);
    if (!sequence) {
      if (ragged)
        throw std::invalid_argument("DataCollatorWithPadding: key '" + key +
                                    "' has different shapes across examples and is not a 1-D "
                                    "sequence");
      batch.set(key, at::stack(parts));
      continue;
    }
    int64_t longest = 0;
    for (const auto& t : parts) {
      if (t.dim() != 1)
        throw std::invalid_argument("DataCollatorWithPadding: key '" + key +
                                    "' mixes 1-D and other shapes");
      longest = std::max(longest, t.size(0));
    }
    int64_t length = longest;
    if (options_.max_length) {
      if (longest > *options_.max_length)
        throw std::invalid_argument("DataCollatorWithPadding: a '" + key + "' sequence of " +
                                    std::to_string(longest) + " exceeds max_length " +
                                    std::to_string(*options_.max_length) +
                                    "; truncate when tokenizing");
      length = *options_.max_length;
    }
    if (options_.pad_to_multiple_of) {
      const int64_t m = *options_.pad_to_multiple_of;
      length = (length + m - 1) / m * m;
    }
    at::Tensor out = at::full({n, length}, padding_value_for(key, options_.pad_token_id),
                              parts.front().options());
    for (int64_t i = 0; i < n; ++i) {
      const at::Tensor& t = parts[static_cast<size_t>(i)];
      out[i].narrow(0, 0, t.size(0)).copy_(t);
    }
    batch.set(key, out);
  }
  return batch;
}

}  // namespace ctrainer
