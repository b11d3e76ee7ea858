#include <ctrainer/models/tokenizers/tokenizer.h>

#include <algorithm>

#include <ctrainer/core/errors.h>

namespace ctrainer {

std::vector<Encoding> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                              const std::vector<std::string>* pairs,
                                              const EncodeOptions& options) const {
  if (pairs != nullptr && pairs->size() != texts.size())
    throw ArgumentError("encode_batch: " + std::to_string(texts.size()) + " texts but " +
                        std::to_string(pairs->size()) + " pairs; give one pair per text");
  // Each alone first: padding to the batch's longest needs every length.
  EncodeOptions one = options;
  if (options.padding == Padding::kLongest) one.padding = Padding::kNone;
  std::vector<Encoding> out;
  out.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i)
    out.push_back(pairs ? encode(texts[i], std::string_view((*pairs)[i]), one)
                        : encode(texts[i], std::nullopt, one));
  if (options.padding != Padding::kLongest || out.empty()) return out;
  size_t longest = 0;
  for (const auto& e : out) longest = std::max(longest, e.input_ids.size());
  if (options.pad_to_multiple_of && *options.pad_to_multiple_of > 0) {
    const auto m = static_cast<size_t>(*options.pad_to_multiple_of);
    longest = (longest + m - 1) / m * m;
  }
  const int64_t pad = pad_id();
  const std::string pad_token = *special_tokens().pad;
  const bool left = options.padding_side.value_or(padding_side()) == Side::kLeft;
  for (auto& e : out) {
    const size_t length = e.input_ids.size();
    if (length >= longest) continue;
    // Pads `v` at the padding side; fields a tokenizer does not fill (other lengths) stay so.
    const auto pad_field = [&](auto& v, const auto& value) {
      if (v.size() == length) v.insert(left ? v.begin() : v.end(), longest - length, value);
    };
    pad_field(e.token_type_ids, int64_t{0});
    pad_field(e.tokens, pad_token);
    pad_field(e.offsets, std::pair<int64_t, int64_t>{0, 0});
    pad_field(e.special_tokens_mask, int64_t{1});
    pad_field(e.attention_mask, int64_t{0});
    pad_field(e.input_ids, pad);
  }
  return out;
}

std::vector<std::string> Tokenizer::decode_batch(const std::vector<std::vector<int64_t>>& batch,
                                                 bool skip_special_tokens,
                                                 bool clean_up_tokenization_spaces) const {
  std::vector<std::string> out;
  out.reserve(batch.size());
  for (const auto& ids : batch)
    out.push_back(decode(ids, skip_special_tokens, clean_up_tokenization_spaces));
  return out;
}

int64_t Tokenizer::pad_id() const {
  const auto pad = special_tokens().pad;
  if (!pad) throw ArgumentError(tokenizer_class() + " has no padding token");
  const auto id = token_to_id(*pad);
  if (!id) throw ArgumentError(tokenizer_class() + ": padding token " + *pad + " has no id");
  return *id;
}

}  // namespace ctrainer
