#pragma once
/// \file Byte-level BPE from vocab.json + merges.txt, the files of GPT-2 and RoBERTa checkpoints
/// saved without a tokenizer.json: the tokenizer.json transformers 5 builds from them
/// (GPT2Tokenizer and RobertaTokenizer: ByteLevel pre-tokenizer and decoder, BPE with an empty
/// continuing-subword prefix; RoBERTa's post-processor).
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

namespace ctrainer::tokenizers {

/// The tokenizer.json of `folder`'s vocab.json + merges.txt as transformers builds it for the
/// class `config` names (its add_prefix_space, trim_offsets and special tokens), or nothing
/// when the folder lacks either file. Throws ArgumentError naming the file when one is
/// malformed.
std::optional<nlohmann::json> tokenizer_json_from_bpe_files(const std::filesystem::path& folder,
                                                            const nlohmann::json& config);

}  // namespace ctrainer::tokenizers
