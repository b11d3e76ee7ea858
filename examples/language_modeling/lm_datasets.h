#pragma once
// The data of run_clm: text files read as HF datasets' "text" and "json" loaders read them, the
// validation split cut from the train file as datasets' percent slicing cuts it, and the texts
// tokenized and grouped into blocks as run_clm.py's group_texts groups them.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ctrainer/models/tokenizers/tokenizer.h>
#include <ctrainer/trainer/data/dataset.h>

namespace run_lm {

/// The examples of `path`: a .txt file's lines (datasets' text loader: universal newlines, split
/// where Python's str.splitlines splits, each with its line break when keep_linebreaks), or the
/// "text" field (else the first field) of a .json/.jsonl file's objects (JSON lines, or one
/// JSON array). Throws ctrainer::ArgumentError naming the file (and line) when it cannot.
std::vector<std::string> read_text_examples(const std::string& path, bool keep_linebreaks);

/// {validation, train}: the first round(percentage% of the examples) and the rest, as
/// datasets' "train[:P%]" and "train[P%:]" (rounding to the closest, halves to even).
std::pair<std::vector<std::string>, std::vector<std::string>> split_validation(
    std::vector<std::string> examples, int64_t percentage);

/// Number of texts group_texts concatenates at once (datasets' map batch size): each group's
/// remainder shorter than a block is dropped.
inline constexpr size_t kGroupTextsBatch = 1000;

/// Tokenizes each text (with the tokenizer's special tokens, no truncation), concatenates the
/// ids of every kGroupTextsBatch texts and cuts them into blocks of `block_size`: a dataset of
/// "input_ids", "attention_mask" and "labels" (= input_ids) [blocks, block_size]. A group with
/// fewer than block_size tokens throws ctrainer::ArgumentError naming `split`, as run_clm.py.
std::shared_ptr<ctrainer::Dataset> group_texts(const std::vector<std::string>& texts,
                                               const ctrainer::Tokenizer& tokenizer,
                                               int64_t block_size, const std::string& split,
                                               std::optional<int64_t> max_blocks);

/// How run_mlm tokenizes (HF run_mlm.py): every text with the special tokens mask, and the
/// offsets when whole words are masked.
struct MlmTokenization {
  int64_t max_seq_length = 512;
  /// One example per non-blank line, truncated to max_seq_length (else: group_mlm_texts blocks).
  bool line_by_line = false;
  /// With line_by_line: pad each example to max_seq_length.
  bool pad_to_max_length = false;
  /// Keep "offset_mapping" [T, 2] for whole-word masking.
  bool offsets = false;
};

/// run_mlm.py's examples: "input_ids", "attention_mask", "special_tokens_mask" (and
/// "token_type_ids" when the tokenizer makes them, "offset_mapping" when asked) per example,
/// of ragged lengths; DataCollatorForLanguageModeling pads and masks them. Grouped (not
/// line_by_line): every kGroupTextsBatch texts are concatenated and cut into max_seq_length
/// examples, the remainder dropped unless the group is shorter than one (then it is one short
/// example, as run_mlm.py keeps it). Throws ctrainer::ArgumentError naming `split` when nothing
/// is left, or when offsets are asked of a tokenizer that does not track them.
std::shared_ptr<ctrainer::Dataset> mlm_examples(const std::vector<std::string>& texts,
                                                const ctrainer::Tokenizer& tokenizer,
                                                const MlmTokenization& options,
                                                const std::string& split,
                                                std::optional<int64_t> max_examples);

}  // namespace run_lm
