// The tokenizer.json encoders on arbitrary text: byte 0 picks one of five small tokenizers
// (byte-level BPE as GPT-2 with added tokens, byte-fallback BPE behind Metaspace as Llama 2,
// Unigram behind Nmt + NFKC as T5, WordPiece behind BertNormalizer, WordLevel behind a Sequence
// of pre-tokenizers) and the options (special tokens, truncation strategy and side, padding),
// byte 1 max_length; the rest is the text, a pair after a line "@@". Only ArgumentError may
// escape (invalid UTF-8). Checks: every field has one length, ids are known to the tokenizer,
// offsets lie within their text (characters, start <= end), max_length holds when truncating,
// and decode works.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>
#include <ctrainer/models/tokenizers/pipeline/pipeline_tokenizer.h>
#include <ctrainer/models/tokenizers/unicode.h>

#include "fuzz_support.h"

namespace {

using ctrainer::tokenizers::PipelineTokenizer;

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "tokenizer_encode_fuzzer: %s\n", what);
  std::abort();
}

const char* const kTokenizers[] = {
    // GPT-2: byte-level BPE, an lstrip/rstrip special token and a single-word one.
    R"({"added_tokens": [{"id": 10, "content": "<|e|>", "special": true, "lstrip": true,
        "rstrip": true, "normalized": false}, {"id": 11, "content": "ab", "single_word": true,
        "normalized": false}],
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true,
        "use_regex": true},
      "post_processor": {"type": "ByteLevel", "trim_offsets": true, "add_prefix_space": true},
      "decoder": {"type": "ByteLevel"},
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "Ġ": 2, "Ġa": 3, "ab": 4, "Ġab": 5,
        "c": 6, "Ã": 7, "©": 8}, "merges": [["Ġ", "a"], ["a", "b"], ["Ġa", "b"]]}})",
    // Llama 2: Metaspace, byte fallback, a template with <s>.
    R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true, "normalized": false},
        {"id": 1, "content": "<s>", "special": true, "normalized": false}],
      "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
        "split": false},
      "post_processor": {"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
      "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"},
        "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
      "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
        "vocab": {"<unk>": 0, "<s>": 1, "<0x41>": 2, "<0xC3>": 3, "<0xA9>": 4, "▁": 5, "a": 6,
          "▁a": 7}, "merges": [["▁", "a"]]}})",
    // T5: Nmt + NFKC + collapsed spaces, Metaspace, Unigram.
    R"({"normalizer": {"type": "Sequence", "normalizers": [{"type": "Nmt"}, {"type": "NFKC"},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
      "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
      "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
      "post_processor": {"type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}}],
        "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
      "model": {"type": "Unigram", "unk_id": 2, "vocab": [["<pad>", 0.0], ["</s>", 0.0],
        ["<unk>", 0.0], ["▁", -2.0], ["a", -3.0], ["▁a", -2.5], ["b", -3.0], ["ab", -2.0]]}})",
    // BERT: BertNormalizer, BertPreTokenizer, WordPiece, BertProcessing.
    R"({"normalizer": {"type": "BertNormalizer", "lowercase": true},
      "pre_tokenizer": {"type": "BertPreTokenizer"},
      "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
      "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
      "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[PAD]": 0, "[UNK]": 1,
        "[CLS]": 2, "[SEP]": 3, "a": 4, "##b": 5, "ab": 6, ".": 7, "中": 8}}})",
    // WordLevel behind Whitespace / Digits / Punctuation, Roberta post-processing.
    R"({"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"},
        {"type": "Lowercase"}, {"type": "Strip"}]},
      "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"},
        {"type": "Digits", "individual_digits": true}, {"type": "Punctuation"}]},
      "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1]},
      "model": {"type": "WordLevel", "unk_token": "<unk>", "vocab": {"<unk>": 0, "<s>": 1,
        "</s>": 2, "a": 3, "b": 4, "1": 5, ".": 6}}})",
};

const PipelineTokenizer& tokenizer(unsigned index) {
  static std::vector<std::unique_ptr<PipelineTokenizer>> all = [] {
    std::vector<std::unique_ptr<PipelineTokenizer>> made;
    for (const char* text : kTokenizers)
      made.push_back(std::make_unique<PipelineTokenizer>(nlohmann::json::parse(text), "fuzz"));
    return made;
  }();
  return *all[index % all.size()];
}

size_t characters(const std::string& s) {
  return ctrainer::tokenizers::to_u32(s).size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  if (size < 2) return 0;
  const unsigned flags = data[0];
  const PipelineTokenizer& t = tokenizer(flags % 5);
  const auto parts = ctrainer::fuzz::split_parts(ctrainer::fuzz::bytes_of(data + 2, size - 2), 2);
  const std::string text(parts[0]);
  const std::string pair = parts.size() > 1 ? std::string(parts[1]) : std::string();
  const bool has_pair = parts.size() > 1;
  const bool special = (flags & 0x08) == 0;
  std::optional<ctrainer::tokenizers::TruncationParams> truncation;
  if (flags & 0x10) {
    ctrainer::tokenizers::TruncationParams p;
    p.max_length = data[1] % 40;
    p.strategy = static_cast<ctrainer::tokenizers::TruncationStrategy>((flags >> 5) % 3);
    p.from_left = (flags & 0x80) != 0;
    p.stride = (data[1] / 40) % 6;  // overflowing windows that overlap by 0-5 tokens
    truncation = p;
  }
  ctrainer::tokenizers::TokenEncoding e;
  try {
    e = t.encode(text, has_pair ? &pair : nullptr, special, truncation);
  } catch (const ctrainer::ArgumentError&) {
    return 0;  // invalid UTF-8, or a truncation that cannot be honoured
  }
  const size_t longest = std::max(characters(text), has_pair ? characters(pair) : 0);
  // The encoding and every overflowing window (windows of windows included) are well formed.
  // Only the encoding itself must fit max_length: as in the Rust library, a sequence truncated
  // to nothing (max_length 1 for a pair, or room for the special tokens only) overflows whole,
  // as one window longer than max_length.
  std::vector<const ctrainer::tokenizers::TokenEncoding*> pending{&e};
  while (!pending.empty()) {
    const auto& w = *pending.back();
    pending.pop_back();
    const size_t n = w.ids.size();
    if (w.type_ids.size() != n || w.tokens.size() != n || w.offsets.size() != n ||
        w.special_tokens_mask.size() != n || w.attention_mask.size() != n || w.words.size() != n)
      broken("the encoding's fields differ in length");
    for (size_t i = 0; i < n; ++i) {
      if (!t.id_to_token(w.ids[i])) broken("an id the tokenizer does not know");
      if (w.offsets[i].first > w.offsets[i].second || w.offsets[i].second > longest)
        broken("offsets outside the text");
    }
    if (truncation && &w == &e && n > truncation->max_length) broken("longer than max_length");
    if (!truncation && !w.overflowing.empty()) broken("overflowing windows without truncation");
    for (const auto& window : w.overflowing) pending.push_back(&window);
  }
  try {
    (void)t.decode(e.ids, true);
    (void)t.decode(e.ids, false);
  } catch (const ctrainer::ArgumentError&) {
    broken("decode refused ids the tokenizer produced");
  }
  return 0;
}
