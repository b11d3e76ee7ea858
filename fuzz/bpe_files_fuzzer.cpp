// A model folder's vocab.json + merges.txt + tokenizer_config.json (the three parts of the input,
// separated by a line "@@") read as AutoTokenizer reads a GPT-2 or RoBERTa folder without a
// tokenizer.json: malformed files must be refused with ArgumentError naming them (nothing else
// may escape); a folder that loads must encode and decode a text.
#include <cstdio>
#include <cstdlib>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/pipeline/pretrained_tokenizer_fast.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto parts = ctrainer::fuzz::split_parts(ctrainer::fuzz::bytes_of(data, size), 3);
  const auto folder = ctrainer::fuzz::fresh_scratch_folder("bpe_files");
  ctrainer::fuzz::write_file(folder / "vocab.json", parts[0]);
  ctrainer::fuzz::write_file(folder / "merges.txt", parts.size() > 1 ? parts[1] : "");
  if (parts.size() > 2) ctrainer::fuzz::write_file(folder / "tokenizer_config.json", parts[2]);
  std::shared_ptr<ctrainer::PreTrainedTokenizerFast> tokenizer;
  try {
    tokenizer = ctrainer::PreTrainedTokenizerFast::from_pretrained(folder.string());
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  try {
    const auto e = tokenizer->encode("Hello world, h\xC3\xA9llo!", std::string_view("pair"), {});
    if (e.input_ids.size() != e.offsets.size() || e.input_ids.size() != e.tokens.size()) {
      std::fprintf(stderr, "bpe_files_fuzzer: an encoding's fields differ in length\n");
      std::abort();
    }
    (void)tokenizer->decode(e.input_ids, true);
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
