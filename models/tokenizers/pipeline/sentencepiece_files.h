#pragma once
/// \file The tokenizer transformers 5 builds from a folder's SentencePiece model (tokenizer.model,
/// or T5's spiece.model) when the folder has no tokenizer.json, class by class:
/// - LlamaTokenizer: BPE over every piece (merges from the vocabulary by piece id, byte_fallback,
///   no unknown token), Metaspace by add_prefix_space / legacy, no normalizer;
/// - T5Tokenizer: Unigram (unknown id 2) plus extra_ids sentinels, the precompiled character map,
///   WhitespaceSplit + Metaspace, "$A </s>";
/// - no class, PreTrainedTokenizerFast or TokenizersBackend: what the model's own trainer and
///   normalizer specs say (SpmConverter.build_tokenizer_from_spm_proto), which encodes as
///   sentencepiece itself does.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ctrainer::tokenizers {

struct SentencePieceTokenizer {
  std::filesystem::path model_file;
  /// model, normalizer, pre_tokenizer, decoder and the pieces that are added tokens; no
  /// post-processor (see `post_processor`).
  nlohmann::json tokenizer_json;
  /// Special tokens the class or the model gives when the config names none ("bos_token" ->
  /// "<s>"), as transformers' class defaults and the generic path's trainer spec.
  std::map<std::string, std::string> default_special_tokens;
  /// How transformers sets the post-processor once the special tokens are known: T5's template
  /// "$A </s>" with the eos token's id, or (the others) the template of add_bos_token /
  /// add_eos_token.
  enum class PostProcessor { kT5, kBosEos } post_processor = PostProcessor::kBosEos;
  /// The class's padding side when the config sets none (LlamaTokenizer pads on the left).
  std::string default_padding_side = "right";
};

/// A special token and its id.
struct TokenAndId {
  std::string token;
  int64_t id = 0;
};

/// The post-processor transformers gives `built` once its special tokens are registered: T5's
/// "$A </s>" with `eos`'s id (ArgumentError without an eos token), or the template of the
/// config's add_bos_token / add_eos_token (each ignored when the token is missing), as
/// transformers' update_post_processor builds it.
nlohmann::json sentencepiece_post_processor(const SentencePieceTokenizer& built,
                                            const nlohmann::json& config,
                                            const std::optional<TokenAndId>& bos,
                                            const std::optional<TokenAndId>& eos);

/// The tokenizer of `folder`'s SentencePiece model for the class `class_name` (tokenizer_class
/// of `config`, "" when none), or nothing when the folder has no model file. Throws
/// ArgumentError naming the file for a malformed model, and naming the class for one whose
/// construction is not built (ALBERT, XLNet, CamemBERT and other SentencePiece classes).
std::optional<SentencePieceTokenizer> tokenizer_from_sentencepiece(
    const std::filesystem::path& folder, const nlohmann::json& config,
    const std::string& class_name);

}  // namespace ctrainer::tokenizers
