#include <ctrainer/trainer/data/seq2seq_collator.h>

#include <algorithm>
#include <string>

#include <ATen/ATen.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/generation/shift_tokens.h>

namespace ctrainer {
DataCollatorForSeq2Seq::DataCollatorForSeq2Seq(Seq2SeqCollatorOptions options) : options_(options) {
  if (options_.max_length && *options_.max_length < 1)
    throw ArgumentError("DataCollatorForSeq2Seq: max_length must be >= 1");
  if (options_.pad_to_multiple_of && *options_.pad_to_multiple_of < 1)
    throw ArgumentError("DataCollatorForSeq2Seq: pad_to_multiple_of must be >= 1");
}

Batch DataCollatorForSeq2Seq::operator()(const std::vector<Example>& examples) const {
  Batch batch;
  if (examples.empty()) return batch;
  const auto padded_length = [&](const std::string& key, int64_t longest) {
    int64_t length = longest;
    if (options_.max_length) {
      if (longest > *options_.max_length)
        throw ArgumentError("DataCollatorForSeq2Seq: a '" + key + "' sequence of " +
                            std::to_string(longest) + " exceeds max_length " +
                            std::to_string(*options_.max_length) + "; truncate when tokenizing");
      length = *options_.max_length;
    }
    if (options_.pad_to_multiple_of) {
      const int64_t m = *options_.pad_to_multiple_of;
      length = (length + m - 1) / m * m;
    }
    return length;
  };
  for (const auto& key : examples.front().keys()) {
    std::vector<at::Tensor> parts;
    parts.reserve(examples.size());
    bool ragged = false;
    for (const auto& example : examples) {
      if (!example.contains(key))
        throw ArgumentError("DataCollatorForSeq2Seq: an example lacks key '" + key + "'");
      parts.push_back(example.at(key));
      ragged = ragged || parts.back().sizes() != parts.front().sizes();
    }
    if (parts.front().dim() != 1) {
      if (ragged)
        throw ArgumentError("DataCollatorForSeq2Seq: key '" + key +
                            "' has different shapes across examples and is not a 1-D sequence");
      batch.set(key, at::stack(parts));
      continue;
    }
    int64_t longest = 0;
    for (const auto& part : parts) {
      if (part.dim() != 1)
        throw ArgumentError("DataCollatorForSeq2Seq: key '" + key + "' mixes 1-D and other shapes");
      longest = std::max(longest, part.size(0));
    }
    const bool labels = key == "labels";
    const int64_t value =
        labels ? options_.label_pad_token_id : padding_value_for(key, options_.pad_token_id);
    batch.set(key, pad_sequences(parts, padded_length(key, longest), value, options_.pad_left));
  }
  if (options_.decoder_start_token_id && batch.contains("labels"))
    batch.set("decoder_input_ids",
              generation::shift_tokens_right(batch.at("labels"), options_.decoder_pad_token_id,
                                             *options_.decoder_start_token_id));
  return batch;
}

}  // namespace ctrainer
