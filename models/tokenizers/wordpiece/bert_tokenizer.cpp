#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>

#include <algorithm>

#include <ctrainer/core/errors.h>

namespace ctrainer {

namespace {

constexpr std::string_view kPad = "[PAD]";
constexpr std::string_view kUnk = "[UNK]";
constexpr std::string_view kCls = "[CLS]";
constexpr std::string_view kSep = "[SEP]";
constexpr std::string_view kMask = "[MASK]";
constexpr std::string_view kSpecialTokens[] = {kPad, kUnk, kCls, kSep, kMask};

int64_t require_token(const Vocab& vocab, std::string_view token) {
  if (auto id = vocab.find(token)) return *id;
  throw ArgumentError("vocabulary " + vocab.source() + " has no " + std::string(token) +
                      " token; a BERT vocabulary needs [PAD], [UNK], [CLS], [SEP] and [MASK]");
}

/// The special token starting at `text[pos]`, if any (HF splits them out before normalising).
std::optional<std::string_view> special_token_at(std::string_view text, size_t pos) {
  for (std::string_view token : kSpecialTokens)
    if (text.compare(pos, token.size(), token) == 0) return token;
  return std::nullopt;
}

/// HF's clean_up_tokenization: removes the spaces the join put before punctuation/contractions.
void clean_up_tokenization(std::string& s) {
  static constexpr std::pair<std::string_view, std::string_view> kReplacements[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kReplacements) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
      out.append(s, pos, hit - pos);
      out.append(to);
    }
    out.append(s, pos, std::string::npos);
    s = std::move(out);
  }
}

}  // namespace

BertTokenizer BertTokenizer::from_vocab_file(const std::string& vocab_path,
                                             BertTokenizerOptions options) {
  return BertTokenizer(Vocab::load(vocab_path), std::move(options));
}

BertTokenizer::BertTokenizer(Vocab vocab, BertTokenizerOptions options)
    : vocab_(std::make_shared<const Vocab>(std::move(vocab))),
      basic_(std::move(options)),
      wordpiece_(*vocab_, require_token(*vocab_, kUnk)) {
  pad_id_ = require_token(*vocab_, kPad);
  unk_id_ = require_token(*vocab_, kUnk);
  cls_id_ = require_token(*vocab_, kCls);
  sep_id_ = require_token(*vocab_, kSep);
  mask_id_ = require_token(*vocab_, kMask);
}

void BertTokenizer::append_ids(std::string_view text, std::vector<int64_t>& ids) const {
  thread_local WordList words;
  size_t segment_begin = 0;
  auto flush_segment = [&](size_t end) {
    if (end <= segment_begin) return;
    basic_.tokenize(text.substr(segment_begin, end - segment_begin), words);
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string_view word = words[i];
      if (basic_.is_never_split(word)) {
        ids.push_back(convert_token_to_id(word));
      } else {
        wordpiece_.tokenize(word, ids);
      }
    }
  };
  for (size_t pos = text.find('['); pos != std::string_view::npos; pos = text.find('[', pos)) {
    if (auto special = special_token_at(text, pos)) {
      flush_segment(pos);
      ids.push_back(*vocab_->find(*special));
      pos += special->size();
      segment_begin = pos;
    } else {
      ++pos;
    }
  }
  flush_segment(text.size());
}

std::vector<int64_t> BertTokenizer::tokenize_to_ids(std::string_view text) const {
  std::vector<int64_t> ids;
  append_ids(text, ids);
  return ids;
}

std::vector<std::string> BertTokenizer::tokenize(std::string_view text) const {
  return convert_ids_to_tokens(tokenize_to_ids(text));
}

int64_t BertTokenizer::convert_token_to_id(std::string_view token) const {
  return vocab_->find(token).value_or(unk_id_);
}

std::vector<int64_t> BertTokenizer::convert_tokens_to_ids(
    const std::vector<std::string>& tokens) const {
  std::vector<int64_t> ids;
  ids.reserve(tokens.size());
  for (const auto& token : tokens) ids.push_back(convert_token_to_id(token));
  return ids;
}

bool BertTokenizer::is_special_id(int64_t id) const {
  return id == pad_id_ || id == unk_id_ || id == cls_id_ || id == sep_id_ || id == mask_id_;
}

std::vector<std::string> BertTokenizer::convert_ids_to_tokens(const std::vector<int64_t>& ids,
                                                              bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    if (skip_special_tokens && is_special_id(id)) continue;
    tokens.push_back(vocab_->token(id));
  }
  return tokens;
}

Encoding BertTokenizer::encode(std::string_view text, std::optional<std::string_view> pair,
                               const EncodeOptions& options) const {
  if (options.max_length && *options.max_length <= 0)
    throw ArgumentError("max_length must be positive, got " + std::to_string(*options.max_length));
  if (options.pad_to_multiple_of && *options.pad_to_multiple_of <= 0)
    throw ArgumentError("pad_to_multiple_of must be positive, got " +
                        std::to_string(*options.pad_to_multiple_of));
  if (options.truncation != Truncation::kNone && !options.max_length)
    throw ArgumentError("truncation needs max_length");
  if (options.padding == Padding::kMaxLength && !options.max_length)
    throw ArgumentError("padding to max_length needs max_length");
  if (options.truncation == Truncation::kOnlySecond && !pair)
    throw ArgumentError("truncation only_second needs a pair of texts, got a single text");
  if (options.stride != 0 || options.return_overflowing_tokens)
    throw ArgumentError(
        "stride and overflowing tokens come from tokenizer.json pipelines only: load the "
        "tokenizer from a folder with tokenizer.json (transformers' save_pretrained writes one) "
        "instead of a vocab.txt");

  std::vector<int64_t> first = tokenize_to_ids(text);
  std::vector<int64_t> second;
  if (pair) second = tokenize_to_ids(*pair);

  const size_t specials = options.add_special_tokens ? (pair ? 3 : 2) : 0;
  const size_t total = first.size() + second.size() + specials;
  if (options.truncation != Truncation::kNone && total > static_cast<size_t>(*options.max_length)) {
    const size_t remove = total - static_cast<size_t>(*options.max_length);
    const std::string too_short = "max_length " + std::to_string(*options.max_length) +
                                  " cannot be met by removing " + std::to_string(remove) +
                                  " tokens from ";
    switch (options.truncation) {
      case Truncation::kLongestFirst: {
        if (remove > first.size() + second.size())
          throw ArgumentError("max_length " + std::to_string(*options.max_length) +
                              " is shorter than the " + std::to_string(specials) +
                              " special tokens");
        const size_t budget = first.size() + second.size() - remove;
        if (!pair) {
          first.resize(budget);
          break;
        }
        // The Rust tokenizers' rule (BertTokenizerFast, and BertTokenizer since transformers
        // 5), not the old Python one-token-at-a-time loop: the shorter sequence is kept whole
        // if the longer one can take the rest of the budget; otherwise both get half of it,
        // the odd token going to the longer one (to the second on a tie).
        const bool first_is_longer = first.size() > second.size();
        size_t keep_shorter = std::min(first.size(), second.size());
        size_t keep_longer =
            keep_shorter > budget ? keep_shorter : std::max(keep_shorter, budget - keep_shorter);
        if (keep_shorter + keep_longer > budget) {
          keep_shorter = budget / 2;
          keep_longer = keep_shorter + budget % 2;
        }
        first.resize(std::min(first.size(), first_is_longer ? keep_longer : keep_shorter));
        second.resize(std::min(second.size(), first_is_longer ? keep_shorter : keep_longer));
        break;
      }
      case Truncation::kOnlyFirst:
        // HF requires the truncated sequence to keep at least one token.
        if (first.size() <= remove)
          throw ArgumentError(too_short + "the first sequence (" + std::to_string(first.size()) +
                              " tokens); use longest_first or a larger max_length");
        first.resize(first.size() - remove);
        break;
      case Truncation::kOnlySecond:
        if (second.size() <= remove)
          throw ArgumentError(too_short + "the second sequence (" + std::to_string(second.size()) +
                              " tokens); use longest_first or a larger max_length");
        second.resize(second.size() - remove);
        break;
      case Truncation::kNone:
        break;
    }
  }

  Encoding enc;
  const size_t length = first.size() + second.size() + specials;
  enc.input_ids.reserve(length);
  enc.token_type_ids.reserve(length);
  if (options.add_special_tokens) enc.input_ids.push_back(cls_id_);
  enc.input_ids.insert(enc.input_ids.end(), first.begin(), first.end());
  if (options.add_special_tokens) enc.input_ids.push_back(sep_id_);
  enc.token_type_ids.assign(enc.input_ids.size(), 0);
  if (pair) {
    enc.input_ids.insert(enc.input_ids.end(), second.begin(), second.end());
    if (options.add_special_tokens) enc.input_ids.push_back(sep_id_);
    enc.token_type_ids.resize(enc.input_ids.size(), 1);
  }
  enc.attention_mask.assign(enc.input_ids.size(), 1);

  if (options.padding != Padding::kNone) {
    size_t target = options.padding == Padding::kMaxLength
                        ? static_cast<size_t>(*options.max_length)
                        : enc.input_ids.size();
    if (options.pad_to_multiple_of) {
      const auto multiple = static_cast<size_t>(*options.pad_to_multiple_of);
      target = (target + multiple - 1) / multiple * multiple;
    }
    if (target > enc.input_ids.size()) {
      enc.input_ids.resize(target, pad_id_);
      enc.token_type_ids.resize(target, 0);
      enc.attention_mask.resize(target, 0);
    }
  }
  return enc;
}

std::string BertTokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens,
                                  bool clean_up_tokenization_spaces) const {
  // As HF's slow tokenizer: runs of ordinary pieces are joined (" ##" removed) separately from
  // the special tokens, and the parts are joined with single spaces.
  std::string text;
  std::string run;
  auto flush_run = [&] {
    if (run.empty()) return;
    if (!text.empty()) text.push_back(' ');
    text.append(run);
    run.clear();
  };
  for (int64_t id : ids) {
    const std::string& token = vocab_->token(id);
    if (is_special_id(id)) {
      if (skip_special_tokens) continue;
      flush_run();
      if (!text.empty()) text.push_back(' ');
      text.append(token);
      continue;
    }
    if (!run.empty() && token.starts_with("##")) {
      run.append(token, 2, std::string::npos);
    } else {
      if (!run.empty()) run.push_back(' ');
      run.append(token);
    }
  }
  flush_run();
  if (clean_up_tokenization_spaces) clean_up_tokenization(text);
  return text;
}

}  // namespace ctrainer
