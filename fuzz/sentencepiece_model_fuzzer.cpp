// A model folder with a SentencePiece tokenizer.model and no tokenizer.json: tokenizer_config.json,
// then the model bytes (the two parts of the input, separated by a line "@@"), read as
// AutoTokenizer reads such a folder (LlamaTokenizer, T5Tokenizer or transformers' generic path, by
// the config's class). Malformed models and configs must be refused with ArgumentError naming
// the file (nothing else may escape); a folder that loads must encode and decode a text.
#include <cstdio>
#include <cstdlib>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/pipeline/pretrained_tokenizer_fast.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto parts = ctrainer::fuzz::split_parts(ctrainer::fuzz::bytes_of(data, size), 2);
  const auto folder = ctrainer::fuzz::fresh_scratch_folder("sentencepiece_model");
  if (!parts[0].empty()) ctrainer::fuzz::write_file(folder / "tokenizer_config.json", parts[0]);
  ctrainer::fuzz::write_file(folder / "tokenizer.model", parts.size() > 1 ? parts[1] : "");
  std::shared_ptr<ctrainer::PreTrainedTokenizerFast> tokenizer;
  try {
    tokenizer = ctrainer::PreTrainedTokenizerFast::from_pretrained(folder.string());
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  try {
    const auto e =
        tokenizer->encode(" Hello  world, h\xC3\xA9llo! <s>", std::string_view("pair"), {});
    if (e.input_ids.size() != e.offsets.size() || e.input_ids.size() != e.tokens.size()) {
      std::fprintf(stderr, "sentencepiece_model_fuzzer: an encoding's fields differ in length\n");
      std::abort();
    }
    (void)tokenizer->decode(e.input_ids, true);
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
