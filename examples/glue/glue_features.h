#pragma once
/// \file Tokenizing a GLUE split with a Tokenizer (run_glue's preprocess_function), on all
/// cores, with a result independent of the thread count.
#include <cstdint>
#include <memory>

#include <ctrainer/examples/glue/glue_reader.h>
#include <ctrainer/models/tokenizers/tokenizer.h>
#include <ctrainer/trainer/data/text/tokenized_dataset.h>

namespace ctrainer::glue {

/// How texts become model inputs (run_glue's data arguments).
struct TokenizeOptions {
  /// Longest sequence after tokenization, special tokens included; longer inputs are truncated
  /// longest-first (run_glue's --max_seq_length, truncation=True).
  int64_t max_seq_length = 128;
  /// Pad every example to max_seq_length (run_glue's --pad_to_max_length, which defaults to true
  /// there). When false, batches are padded to their longest example by DataCollatorWithPadding.
  bool pad_to_max_length = false;
  /// Worker threads; 0 uses every hardware thread.
  int64_t num_threads = 0;
};

/// The encoding options TokenizeOptions implies (truncation longest_first, max_length padding
/// when pad_to_max_length).
EncodeOptions encode_options(const TokenizeOptions& options);

/// Tokenizes every example of `split` (text_a with text_b as the pair) into a TokenizedDataset
/// whose labels are the split's class ids or scores (none for test splits). Threads take
/// contiguous chunks and the chunks are joined in order, so the result does not depend on the
/// thread count. Throws ArgumentError naming `source:line` for text the tokenizer rejects
/// (invalid UTF-8), and for max_seq_length < 2 (no room for [CLS] and [SEP]).
std::shared_ptr<TokenizedDataset> tokenize_split(const GlueSplit& split, const Tokenizer& tokenizer,
                                                 const TokenizeOptions& options);

}  // namespace ctrainer::glue
