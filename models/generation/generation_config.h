#pragma once
/// \file transformers' GenerationConfig, as generation_config.json holds it: how generate()
/// chooses the next tokens. As in transformers 5 every field is optional: a field a call leaves
/// unset takes the model's generation_config.json value (merged_over), then transformers' global
/// default (with_global_defaults).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer::generation {

/// One token id or several (eos_token_id, forced_eos_token_id), kept in the form the file used.
struct TokenIds {
  std::vector<int64_t> ids;
  bool as_list = false;  ///< written back as a list even when it holds one id
};

struct GenerationConfig {
  // Length.
  std::optional<int64_t> max_length;      ///< prompt + new tokens (global default 20)
  std::optional<int64_t> max_new_tokens;  ///< wins over max_length when set
  std::optional<int64_t> min_length;      ///< eos is forbidden below it (default 0)
  std::optional<int64_t> min_new_tokens;  ///< eos is forbidden before this many new tokens
  // Strategy.
  std::optional<bool> do_sample;                ///< default false: greedy or beam search
  std::optional<int64_t> num_beams;             ///< default 1
  std::optional<int64_t> num_return_sequences;  ///< default 1
  std::optional<double> length_penalty;         ///< beam scores / length^this (default 1.0)
  /// Beam search's stop: true, false or "never" (default false).
  std::optional<nlohmann::json> early_stopping;
  std::optional<bool> use_cache;  ///< default true
  // Scores.
  std::optional<double> temperature;            ///< sampling: scores / temperature (default 1.0)
  std::optional<int64_t> top_k;                 ///< sampling: keep the k best (default 50; 0: off)
  std::optional<double> top_p;                  ///< sampling: nucleus mass (default 1.0: off)
  std::optional<double> min_p;                  ///< sampling: keep p >= min_p * max p (default off)
  std::optional<double> repetition_penalty;     ///< default 1.0 (off)
  std::optional<int64_t> no_repeat_ngram_size;  ///< default 0 (off)
  std::optional<std::vector<std::vector<int64_t>>> bad_words_ids;
  std::optional<int64_t> forced_bos_token_id;
  std::optional<TokenIds> forced_eos_token_id;
  std::optional<std::vector<int64_t>> suppress_tokens;
  std::optional<std::vector<int64_t>> begin_suppress_tokens;
  std::optional<bool> remove_invalid_values;  ///< nan -> 0, +-inf -> the dtype's max / min
  // Special tokens.
  std::optional<int64_t> pad_token_id;
  std::optional<int64_t> bos_token_id;
  std::optional<TokenIds> eos_token_id;
  std::optional<int64_t> decoder_start_token_id;
  /// The keys transformers writes that change no token (transformers_version, output_scores,
  /// return_dict_in_generate, ...), kept to be written back as read.
  nlohmann::json other = nlohmann::json::object();

  /// Reads a generation_config.json object. A field of a transformers feature ctrainer does not
  /// implement (beam groups, contrastive search, typical_p, constraints, watermarking, ...) is
  /// accepted only with the value that turns it off and refused naming the key otherwise; a
  /// value of the wrong type or range, and a key transformers' GenerationConfig does not have,
  /// are refused naming `source` and the key.
  static GenerationConfig from_json(const nlohmann::json& json, const std::string& source);
  /// The generation fields of a model's config.json (bos/eos/pad/decoder_start token ids and any
  /// legacy generation keys), as transformers' from_model_config makes a model's generation
  /// config when its folder has no generation_config.json.
  static GenerationConfig from_model_config(const nlohmann::json& model_config,
                                            const std::string& source);
  /// A model folder's generation settings, as transformers' from_pretrained sets
  /// model.generation_config: its generation_config.json, else from_model_config(config.json).
  static GenerationConfig for_model_folder(const std::filesystem::path& folder);
  /// Reads `path`: a generation_config.json, or a folder holding one.
  static GenerationConfig from_file(const std::filesystem::path& path);
  /// The set fields and `other`, as transformers' to_json_string(use_diff=True) writes them.
  nlohmann::json to_json() const;
  /// Writes `folder`/generation_config.json.
  void save_pretrained(const std::filesystem::path& folder) const;

  /// This config with every unset field taken from `fallback` (what transformers' generate()
  /// does with the model's generation_config.json).
  GenerationConfig merged_over(const GenerationConfig& fallback) const;
  /// This config with every unset field at transformers' global default
  /// (GenerationConfig._get_default_generation_params()).
  GenerationConfig with_global_defaults() const;
};

}  // namespace ctrainer::generation
