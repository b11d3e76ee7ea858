// The tokenizer.json reader on arbitrary bytes: a file that is not JSON or not a tokenizer must
// be refused with ArgumentError (nothing else may escape). One that loads must encode and
// decode a few texts, throwing nothing but ArgumentError, and what it writes back (to_json)
// must load again and encode those texts to the same ids, type ids, offsets and tokens
// (differential: reading and writing are inverse).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/pipeline/pipeline_tokenizer.h>

#include "fuzz_support.h"

namespace {

using ctrainer::tokenizers::PipelineTokenizer;
using ctrainer::tokenizers::TokenEncoding;

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "tokenizer_json_fuzzer: %s\n", what.c_str());
  std::abort();
}

std::optional<TokenEncoding> try_encode(const PipelineTokenizer& t, const std::string& text,
                                        const std::string* pair, bool special) {
  try {
    return t.encode(text, pair, special);
  } catch (const ctrainer::ArgumentError&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto j = ctrainer::fuzz::parse_json(ctrainer::fuzz::bytes_of(data, size));
  if (!j) return 0;
  std::optional<PipelineTokenizer> tokenizer;
  try {
    tokenizer.emplace(*j, "fuzz.json");
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  std::optional<PipelineTokenizer> again;
  try {
    again.emplace(tokenizer->to_json(), "written back");
  } catch (const ctrainer::ArgumentError& e) {
    broken(std::string("what to_json wrote does not load: ") + e.what());
  }
  static const std::string kTexts[] = {
      "Hello world!", "", "  h\xC3\xA9llo \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 ab12",
      "a<s>b [CLS] x"};
  const std::string pair = "second one";
  for (const std::string& text : kTexts) {
    for (const bool special : {true, false}) {
      const auto a = try_encode(*tokenizer, text, &pair, special);
      const auto b = try_encode(*again, text, &pair, special);
      if (a.has_value() != b.has_value()) broken("written back, one side refuses a text");
      if (!a) continue;
      if (a->ids != b->ids || a->type_ids != b->type_ids || a->offsets != b->offsets ||
          a->tokens != b->tokens)
        broken("written back, the encoding of \"" + text + "\" changed");
      if (a->ids.size() != a->tokens.size() || a->ids.size() != a->offsets.size())
        broken("an encoding's fields differ in length");
      try {
        (void)tokenizer->decode(a->ids, special);
      } catch (const ctrainer::ArgumentError&) {
      }
    }
  }
  return 0;
}
