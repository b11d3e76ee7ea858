// A vocabulary file (--tokenizer_name vocab.txt) on arbitrary bytes: Vocab::load (ArgumentError
// naming path:line), a BertTokenizer over it (ArgumentError when a special token is missing),
// and a sentence encoded and decoded with it.
#include <cstdio>
#include <cstdlib>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>
#include <ctrainer/models/tokenizers/wordpiece/vocab.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto path = ctrainer::fuzz::scratch_file("vocab.txt", ctrainer::fuzz::bytes_of(data, size));
  std::optional<ctrainer::Vocab> vocab;
  try {
    vocab = ctrainer::Vocab::load(path.string());
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  for (int64_t id = 0; id < vocab->size(); ++id) {
    const std::string& token = vocab->token(id);
    if (vocab->find(token) != id || token.size() > vocab->max_token_bytes()) {
      std::fprintf(stderr, "vocab_fuzzer: token %lld does not look up to itself\n",
                   static_cast<long long>(id));
      std::abort();
    }
  }
  try {
    const ctrainer::BertTokenizer tokenizer(std::move(*vocab));
    ctrainer::EncodeOptions options;
    options.max_length = 16;
    options.truncation = ctrainer::Truncation::kLongestFirst;
    options.padding = ctrainer::Padding::kMaxLength;
    const ctrainer::Encoding encoding = tokenizer.encode(
        "Hello, WORLD! naïve café ##ing [MASK] 東京 unaffable", "a second [SEP] text", options);
    (void)tokenizer.decode(encoding.input_ids, /*skip_special_tokens=*/true);
    (void)tokenizer.convert_ids_to_tokens(encoding.input_ids);
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
