// The BERT tokenizer (bundled bert-base-uncased vocabulary) on arbitrary bytes: byte 0 picks the
// options (lower-casing, accent stripping, CJK splitting, special tokens, truncation, padding),
// byte 1 max_length, the rest is the text, and a pair after a line "@@". encode, tokenize and
// decode must throw nothing but ArgumentError (invalid UTF-8, options without max_length, ...).
// Checks: the three outputs have one length, ids are in the vocabulary, and max_length holds
// when truncating.
#include <cstdio>
#include <cstdlib>
#include <map>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>

#include "fuzz_support.h"

namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "tokenizer_fuzzer: %s\n", what);
  std::abort();
}

const ctrainer::BertTokenizer& tokenizer_for(unsigned flags) {
  static const ctrainer::Vocab vocab = ctrainer::Vocab::load(CTRAINER_FUZZ_VOCAB_FILE);
  static std::map<unsigned, ctrainer::BertTokenizer> tokenizers;
  const unsigned key = flags & 0xF;
  auto it = tokenizers.find(key);
  if (it == tokenizers.end()) {
    ctrainer::BertTokenizerOptions options;
    options.do_lower_case = (key & 1) != 0;
    if (key & 2) options.strip_accents = (key & 4) != 0;
    options.tokenize_chinese_chars = (key & 8) == 0;
    options.never_split = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
    it = tokenizers.emplace(key, ctrainer::BertTokenizer(vocab, options)).first;
  }
  return it->second;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  if (size < 2) return 0;
  const unsigned flags = data[0];
  const ctrainer::BertTokenizer& tokenizer = tokenizer_for(flags);
  const auto parts = ctrainer::fuzz::split_parts(ctrainer::fuzz::bytes_of(data + 2, size - 2), 2);

  ctrainer::EncodeOptions options;
  options.add_special_tokens = (flags & 0x10) == 0;
  static const ctrainer::Truncation kTruncations[] = {
      ctrainer::Truncation::kNone, ctrainer::Truncation::kLongestFirst,
      ctrainer::Truncation::kOnlyFirst, ctrainer::Truncation::kOnlySecond};
  options.truncation = kTruncations[(flags >> 5) & 3];
  options.padding = (flags & 0x80) ? ctrainer::Padding::kMaxLength : ctrainer::Padding::kLongest;
  if (data[1] != 0xFF) options.max_length = data[1] % 64;
  if (data[1] & 0x40) options.pad_to_multiple_of = 8;

  try {
    (void)tokenizer.tokenize(parts[0]);
    const std::optional<std::string_view> pair =
        parts.size() > 1 ? std::optional<std::string_view>(parts[1]) : std::nullopt;
    const ctrainer::Encoding encoding = tokenizer.encode(parts[0], pair, options);
    if (encoding.input_ids.size() != encoding.token_type_ids.size() ||
        encoding.input_ids.size() != encoding.attention_mask.size())
      broken("the encoding's three vectors differ in length");
    for (const int64_t id : encoding.input_ids)
      if (id < 0 || id >= tokenizer.vocab_size()) broken("an id outside the vocabulary");
    if (options.truncation != ctrainer::Truncation::kNone && options.max_length &&
        options.padding != ctrainer::Padding::kMaxLength && !options.pad_to_multiple_of &&
        static_cast<int64_t>(encoding.input_ids.size()) > *options.max_length)
      broken("truncation left more than max_length tokens");
    (void)tokenizer.decode(encoding.input_ids, (flags & 1) != 0);
    (void)tokenizer.convert_ids_to_tokens(encoding.input_ids, (flags & 2) != 0);
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
