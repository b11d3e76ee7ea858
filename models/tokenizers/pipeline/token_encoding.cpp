#include <ctrainer/models/tokenizers/pipeline/token_encoding.h>

#include <algorithm>

#include <ctrainer/core/errors.h>

namespace ctrainer::tokenizers {

TokenEncoding TokenEncoding::from_tokens(const std::vector<PositionedToken>& tokens,
                                         int64_t type_id) {
  TokenEncoding e;
  for (const auto& t : tokens) {
    e.ids.push_back(t.id);
    e.type_ids.push_back(type_id);
    e.tokens.push_back(t.value);
    e.offsets.push_back(t.offsets);
    e.special_tokens_mask.push_back(0);
    e.attention_mask.push_back(1);
    e.words.push_back(t.word);
  }
  return e;
}

TokenEncoding TokenEncoding::special(const std::vector<int64_t>& ids,
                                     const std::vector<std::string>& tokens, int64_t type_id) {
  TokenEncoding e;
  e.ids = ids;
  e.tokens = tokens;
  e.type_ids.assign(ids.size(), type_id);
  e.offsets.assign(ids.size(), {0, 0});
  e.special_tokens_mask.assign(ids.size(), 1);
  e.attention_mask.assign(ids.size(), 1);
  e.words.assign(ids.size(), std::nullopt);
  return e;
}

void TokenEncoding::append(const TokenEncoding& o) {
  ids.insert(ids.end(), o.ids.begin(), o.ids.end());
  type_ids.insert(type_ids.end(), o.type_ids.begin(), o.type_ids.end());
  tokens.insert(tokens.end(), o.tokens.begin(), o.tokens.end());
  offsets.insert(offsets.end(), o.offsets.begin(), o.offsets.end());
  special_tokens_mask.insert(special_tokens_mask.end(), o.special_tokens_mask.begin(),
                             o.special_tokens_mask.end());
  attention_mask.insert(attention_mask.end(), o.attention_mask.begin(), o.attention_mask.end());
  words.insert(words.end(), o.words.begin(), o.words.end());
}

void TokenEncoding::merge_with(const TokenEncoding& pair) {
  std::vector<TokenEncoding> windows;
  for (const auto& ours : overflowing) {
    windows.push_back(ours);
    windows.back().merge_with(pair);
    for (const auto& theirs : pair.overflowing) {
      windows.push_back(ours);
      windows.back().merge_with(theirs);
    }
  }
  for (const auto& theirs : pair.overflowing) {
    windows.push_back(*this);
    windows.back().merge_with(theirs);
  }
  append(pair);
  overflowing = std::move(windows);
}

TokenEncoding TokenEncoding::merge(const std::vector<TokenEncoding>& parts) {
  TokenEncoding merged;
  for (const auto& part : parts) merged.merge_with(part);
  return merged;
}

namespace {

/// Tokens [start, stop) of `e`, without its overflowing.
TokenEncoding slice(const TokenEncoding& e, size_t start, size_t stop) {
  const auto part = [&](const auto& v) {
    using Vector = std::decay_t<decltype(v)>;
    return Vector(v.begin() + static_cast<std::ptrdiff_t>(start),
                  v.begin() + static_cast<std::ptrdiff_t>(stop));
  };
  TokenEncoding out;
  out.ids = part(e.ids);
  out.type_ids = part(e.type_ids);
  out.tokens = part(e.tokens);
  out.offsets = part(e.offsets);
  out.special_tokens_mask = part(e.special_tokens_mask);
  out.attention_mask = part(e.attention_mask);
  out.words = part(e.words);
  return out;
}

}  // namespace

void TokenEncoding::truncate(size_t length, size_t stride, bool from_left) {
  const size_t total = size();
  if (length >= total) return;
  if (length == 0) {  // everything overflows, as one window
    TokenEncoding all = std::move(*this);
    *this = TokenEncoding();
    overflowing.push_back(std::move(all));
    return;
  }
  if (stride >= length)
    throw ArgumentError("stride " + std::to_string(stride) + " must be less than the " +
                        std::to_string(length) +
                        " tokens truncation keeps of this sequence: lower --stride or raise "
                        "max_length");
  // Windows of `length` tokens, each starting `length - stride` after the one before, from the
  // kept end until one reaches the other end (HF's parts_ranges).
  const size_t step = length - stride;
  std::vector<std::pair<size_t, size_t>> windows;
  if (!from_left) {
    for (size_t start = 0; start < total; start += step) {
      const size_t stop = std::min(start + length, total);
      windows.emplace_back(start, stop);
      if (stop == total) break;
    }
  } else {
    for (size_t last = total; last-- > 0;) {
      const size_t stop = last + 1;
      const size_t start = stop < length ? 0 : stop - length;
      windows.emplace_back(start, stop);
      if (start == 0 || last < step) break;
      last -= step - 1;
    }
  }
  TokenEncoding kept = slice(*this, windows[0].first, windows[0].second);
  for (size_t i = 1; i < windows.size(); ++i)
    kept.overflowing.push_back(slice(*this, windows[i].first, windows[i].second));
  *this = std::move(kept);
}

void truncate_encodings(TokenEncoding& first, TokenEncoding* second,
                        const TruncationParams& params) {
  if (params.max_length == 0) {
    first.truncate(0, params.stride, params.from_left);
    if (second) second->truncate(0, params.stride, params.from_left);
    return;
  }
  const size_t total = first.size() + (second ? second->size() : 0);
  if (total <= params.max_length) return;
  const size_t to_remove = total - params.max_length;
  switch (params.strategy) {
    case TruncationStrategy::kLongestFirst: {
      if (second == nullptr) {
        first.truncate(total - to_remove, params.stride, params.from_left);
        return;
      }
      // The shorter keeps what it can up to half; the longer takes the rest (HF's rule).
      size_t n1 = first.size(), n2 = second->size();
      const bool swapped = n1 > n2;
      if (swapped) std::swap(n1, n2);
      n2 = n1 > params.max_length ? n1 : std::max(n1, params.max_length - n1);
      if (n1 + n2 > params.max_length) {
        n1 = params.max_length / 2;
        n2 = n1 + params.max_length % 2;
      }
      if (swapped) std::swap(n1, n2);
      first.truncate(n1, params.stride, params.from_left);
      second->truncate(n2, params.stride, params.from_left);
      return;
    }
    case TruncationStrategy::kOnlyFirst:
    case TruncationStrategy::kOnlySecond: {
      TokenEncoding* target = params.strategy == TruncationStrategy::kOnlyFirst ? &first : second;
      if (target == nullptr)
        throw ArgumentError("truncation only_second needs a pair of sequences");
      if (target->size() <= to_remove)
        throw ArgumentError("truncation: the sequence to truncate has " +
                            std::to_string(target->size()) + " tokens but " +
                            std::to_string(to_remove) +
                            " must go to reach max_length: use longest_first or a larger "
                            "max_length");
      target->truncate(target->size() - to_remove, params.stride, params.from_left);
      return;
    }
  }
}

namespace {

void pad_to(TokenEncoding& e, size_t target, const PaddingParams& params) {
  for (auto& window : e.overflowing) pad_to(window, target, params);
  if (e.size() >= target) return;
  const size_t n = target - e.size();
  TokenEncoding pad;
  pad.ids.assign(n, params.pad_id);
  pad.type_ids.assign(n, params.pad_type_id);
  pad.tokens.assign(n, params.pad_token);
  pad.offsets.assign(n, {0, 0});
  pad.special_tokens_mask.assign(n, 1);
  pad.attention_mask.assign(n, 0);
  pad.words.assign(n, std::nullopt);
  if (params.left) {
    pad.append(e);
    pad.overflowing = std::move(e.overflowing);
    e = std::move(pad);
  } else {
    e.append(pad);
  }
}

}  // namespace

void pad_encodings(std::vector<TokenEncoding>& batch, const PaddingParams& params) {
  size_t target = 0;
  if (params.length) {
    target = *params.length;
  } else {
    for (const auto& e : batch) target = std::max(target, e.size());
  }
  if (params.pad_to_multiple_of && *params.pad_to_multiple_of > 0 &&
      target % *params.pad_to_multiple_of != 0)
    target += *params.pad_to_multiple_of - target % *params.pad_to_multiple_of;
  for (auto& e : batch) pad_to(e, target, params);
}

}  // namespace ctrainer::tokenizers
