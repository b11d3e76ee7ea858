#include <ctrainer/models/generation/generation_config.h>

#include <algorithm>
#include <limits>
#include <set>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_config.h>
#include <ctrainer/core/json_file.h>

namespace ctrainer::generation {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kFileName = "generation_config.json";

/// transformers features ctrainer does not implement, with the values that turn them off
/// (besides null, which always does).
const std::vector<std::pair<std::string, std::vector<json>>>& unimplemented_features() {
  static const std::vector<std::pair<std::string, std::vector<json>>> features = {
      {"num_beam_groups", {1}},
      {"diversity_penalty", {0.0}},
      {"penalty_alpha", {}},
      {"typical_p", {1.0}},
      {"epsilon_cutoff", {0.0}},
      {"eta_cutoff", {0.0}},
      {"guidance_scale", {1.0}},
      {"sequence_bias", {}},
      {"encoder_repetition_penalty", {1.0}},
      {"encoder_no_repeat_ngram_size", {0}},
      {"exponential_decay_length_penalty", {}},
      {"constraints", {}},
      {"force_words_ids", {}},
      {"watermarking_config", {}},
      {"stop_strings", {}},
      {"top_h", {}},
      {"renormalize_logits", {false}},
      {"token_healing", {false}},
      {"max_time", {}},
      {"dola_layers", {}},
      {"prompt_lookup_num_tokens", {}},
      {"low_memory", {false}},
      {"use_mtp", {false}},
      {"speculation_type", {}}};
  return features;
}

/// The GenerationConfig fields this struct holds, by their JSON keys.
const std::set<std::string>& generation_fields() {
  static const std::set<std::string> fields = {"max_length",
                                               "max_new_tokens",
                                               "min_length",
                                               "min_new_tokens",
                                               "do_sample",
                                               "num_beams",
                                               "num_return_sequences",
                                               "length_penalty",
                                               "early_stopping",
                                               "use_cache",
                                               "temperature",
                                               "top_k",
                                               "top_p",
                                               "min_p",
                                               "repetition_penalty",
                                               "no_repeat_ngram_size",
                                               "bad_words_ids",
                                               "forced_bos_token_id",
                                               "forced_eos_token_id",
                                               "suppress_tokens",
                                               "begin_suppress_tokens",
                                               "remove_invalid_values",
                                               "pad_token_id",
                                               "bos_token_id",
                                               "eos_token_id",
                                               "decoder_start_token_id"};
  return fields;
}

/// The keys of transformers 5.24's GenerationConfig that change no token here (outputs,
/// caching, compilation, assisted decoding without an assistant) or that it writes itself: read
/// and written back as they are.
const std::set<std::string>& informational_keys() {
  static const std::set<std::string> keys = {"_from_model_config",
                                             "transformers_version",
                                             "output_attentions",
                                             "output_hidden_states",
                                             "output_scores",
                                             "output_logits",
                                             "return_dict_in_generate",
                                             "cache_implementation",
                                             "cache_config",
                                             "max_cache_len",
                                             "compile_config",
                                             "disable_compile",
                                             "continuous_batching_config",
                                             "prefill_chunk_size",
                                             "is_assistant",
                                             "num_assistant_tokens",
                                             "num_assistant_tokens_schedule",
                                             "assistant_confidence_threshold",
                                             "assistant_early_exit",
                                             "assistant_lookbehind",
                                             "assistant_ensemble_weight",
                                             "target_lookbehind",
                                             "max_matching_ngram_size"};
  return keys;
}

/// Whether `key` names a transformers feature ctrainer refuses unless it is off.
bool is_unimplemented_feature(const std::string& key) {
  return std::any_of(unimplemented_features().begin(), unimplemented_features().end(),
                     [&key](const auto& feature) { return feature.first == key; });
}

class Reader {
 public:
  Reader(const json& j, const std::string& source) : j_(j), source_(source) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw ArgumentError(source_ + ": \"" + key + "\" " + what);
  }
  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  std::optional<int64_t> integer(const std::string& key, int64_t minimum) const {
    if (!has(key)) return std::nullopt;
    const json& v = j_.at(key);
    if (!v.is_number_integer()) fail(key, "must be an integer, got " + v.dump());
    const auto value = v.get<int64_t>();
    if (value < minimum)
      fail(key, "must be at least " + std::to_string(minimum) + ", got " + v.dump());
    return value;
  }
  std::optional<double> number(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    const json& v = j_.at(key);
    if (!v.is_number()) fail(key, "must be a number, got " + v.dump());
    return v.get<double>();
  }
  std::optional<bool> boolean(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    if (!j_.at(key).is_boolean()) fail(key, "must be true or false, got " + j_.at(key).dump());
    return j_.at(key).get<bool>();
  }
  std::vector<int64_t> id_list(const std::string& key, const json& v) const {
    if (!v.is_array()) fail(key, "must be a list of token ids, got " + v.dump());
    std::vector<int64_t> ids;
    for (const auto& item : v) {
      if (!item.is_number_integer() || item.get<int64_t>() < 0)
        fail(key, "must hold non-negative token ids, got " + v.dump());
      ids.push_back(item.get<int64_t>());
    }
    return ids;
  }
  std::optional<std::vector<int64_t>> ids(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    return id_list(key, j_.at(key));
  }
  std::optional<TokenIds> one_or_more_ids(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    const json& v = j_.at(key);
    if (v.is_array()) {
      auto list = id_list(key, v);
      if (list.empty()) fail(key, "must name at least one token id, got []");
      return TokenIds{std::move(list), true};
    }
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      fail(key, "must be a token id or a list of them, got " + v.dump());
    return TokenIds{{v.get<int64_t>()}, false};
  }

 private:
  const json& j_;
  const std::string& source_;
};

template <typename T>
void keep_set(std::optional<T>& field, const std::optional<T>& fallback) {
  if (!field) field = fallback;
}

}  // namespace

GenerationConfig GenerationConfig::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw ArgumentError(source + ": expected a JSON object, got " + j.dump());
  const Reader r(j, source);
  for (const auto& [key, off_values] : unimplemented_features()) {
    if (!r.has(key)) continue;
    bool off = false;
    for (const auto& value : off_values) off = off || j.at(key) == value;
    if (!off)
      r.fail(key, "is not supported by ctrainer's generate() (got " + j.at(key).dump() +
                      "): remove it or set it to null");
  }
  GenerationConfig c;
  c.max_length = r.integer("max_length", 1);
  c.max_new_tokens = r.integer("max_new_tokens", 1);
  c.min_length = r.integer("min_length", 0);
  c.min_new_tokens = r.integer("min_new_tokens", 0);
  c.do_sample = r.boolean("do_sample");
  c.num_beams = r.integer("num_beams", 1);
  c.num_return_sequences = r.integer("num_return_sequences", 1);
  c.length_penalty = r.number("length_penalty");
  if (r.has("early_stopping")) {
    const json& v = j.at("early_stopping");
    if (!v.is_boolean() && v != "never")
      r.fail("early_stopping", "must be true, false or \"never\", got " + v.dump());
    c.early_stopping = v;
  }
  c.use_cache = r.boolean("use_cache");
  // Ranges are checked where transformers checks them: by the step that uses the value
  // (LogitsProcessors), so that e.g. a temperature of 0 loads and is ignored by greedy decoding.
  c.temperature = r.number("temperature");
  c.top_k = r.integer("top_k", 0);
  c.top_p = r.number("top_p");
  c.min_p = r.number("min_p");
  c.repetition_penalty = r.number("repetition_penalty");
  c.no_repeat_ngram_size = r.integer("no_repeat_ngram_size", 0);
  if (r.has("bad_words_ids")) {
    const json& v = j.at("bad_words_ids");
    if (!v.is_array() || v.empty())
      r.fail("bad_words_ids", "must be a non-empty list of lists of token ids, got " + v.dump());
    std::vector<std::vector<int64_t>> words;
    for (const auto& word : v) {
      words.push_back(r.id_list("bad_words_ids", word));
      if (words.back().empty()) r.fail("bad_words_ids", "holds an empty list");
    }
    c.bad_words_ids = std::move(words);
  }
  c.forced_bos_token_id = r.integer("forced_bos_token_id", 0);
  c.forced_eos_token_id = r.one_or_more_ids("forced_eos_token_id");
  c.suppress_tokens = r.ids("suppress_tokens");
  c.begin_suppress_tokens = r.ids("begin_suppress_tokens");
  c.remove_invalid_values = r.boolean("remove_invalid_values");
  // transformers only warns about a negative pad_token_id; a file may hold one (e.g. -1).
  c.pad_token_id = r.integer("pad_token_id", std::numeric_limits<int64_t>::min());
  c.bos_token_id = r.integer("bos_token_id", 0);
  c.eos_token_id = r.one_or_more_ids("eos_token_id");
  c.decoder_start_token_id = r.integer("decoder_start_token_id", 0);

  // Everything else is kept to be written back as read: informational keys, the unimplemented
  // features at their off values, and keys transformers does not know (it keeps those too).
  // Nulls are dropped, as transformers' use_diff drops values equal to its all-None default.
  const std::set<std::string>& fields = generation_fields();
  for (const auto& [key, value] : j.items()) {
    const bool refused_feature = is_unimplemented_feature(key);
    if (!fields.count(key) && !refused_feature && !informational_keys().count(key))
      r.fail(key,
             "is not a setting of transformers' GenerationConfig; remove it (a misspelt "
             "key would otherwise be ignored)");
    if (!fields.count(key) && !value.is_null()) c.other[key] = value;
  }
  return c;
}

GenerationConfig GenerationConfig::from_model_config(const json& model_config,
                                                     const std::string& source) {
  // transformers' from_model_config: the generation fields config.json sets (non-null); its
  // other keys are the model's, not generation's, and are dropped.
  json generation_keys = json::object();
  for (const auto& [key, value] : model_config.items()) {
    const bool refused_feature = is_unimplemented_feature(key);
    if (!value.is_null() && (generation_fields().count(key) || refused_feature))
      generation_keys[key] = value;
  }
  GenerationConfig config = from_json(generation_keys, source);
  config.other = json::object();
  return config;
}

GenerationConfig GenerationConfig::from_file(const fs::path& path) {
  const fs::path file = fs::is_directory(path) ? path / kFileName : path;
  if (!fs::exists(file))
    throw ArgumentError(file.string() + ": no such generation config (a " + kFileName +
                        ", or a folder holding one)");
  return from_json(read_json_config(file, "generation_config"), file.string());
}

GenerationConfig GenerationConfig::for_model_folder(const fs::path& folder) {
  if (fs::exists(folder / kFileName)) return from_file(folder / kFileName);
  const fs::path model_config = folder / "config.json";
  if (!fs::exists(model_config))
    throw ArgumentError(folder.string() + ": neither " + kFileName +
                        " nor config.json; pass a model folder");
  return from_model_config(read_json_config(model_config, "config"), model_config.string());
}

json GenerationConfig::to_json() const {
  json j = other;
  const auto put = [&](const char* key, const auto& field) {
    if (field) j[key] = *field;
  };
  const auto put_ids = [&](const char* key, const std::optional<TokenIds>& field) {
    if (!field) return;
    if (field->as_list || field->ids.size() != 1)
      j[key] = field->ids;
    else
      j[key] = field->ids.front();
  };
  put("max_length", max_length);
  put("max_new_tokens", max_new_tokens);
  put("min_length", min_length);
  put("min_new_tokens", min_new_tokens);
  put("do_sample", do_sample);
  put("num_beams", num_beams);
  put("num_return_sequences", num_return_sequences);
  put("length_penalty", length_penalty);
  put("early_stopping", early_stopping);
  put("use_cache", use_cache);
  put("temperature", temperature);
  put("top_k", top_k);
  put("top_p", top_p);
  put("min_p", min_p);
  put("repetition_penalty", repetition_penalty);
  put("no_repeat_ngram_size", no_repeat_ngram_size);
  put("bad_words_ids", bad_words_ids);
  put("forced_bos_token_id", forced_bos_token_id);
  put_ids("forced_eos_token_id", forced_eos_token_id);
  put("suppress_tokens", suppress_tokens);
  put("begin_suppress_tokens", begin_suppress_tokens);
  put("remove_invalid_values", remove_invalid_values);
  put("pad_token_id", pad_token_id);
  put("bos_token_id", bos_token_id);
  put_ids("eos_token_id", eos_token_id);
  put("decoder_start_token_id", decoder_start_token_id);
  return j;
}

void GenerationConfig::save_pretrained(const fs::path& folder) const {
  fs::create_directories(folder);
  write_json_file(folder / kFileName, to_json());
}

GenerationConfig GenerationConfig::merged_over(const GenerationConfig& fallback) const {
  GenerationConfig c = *this;
  keep_set(c.max_length, fallback.max_length);
  keep_set(c.max_new_tokens, fallback.max_new_tokens);
  keep_set(c.min_length, fallback.min_length);
  keep_set(c.min_new_tokens, fallback.min_new_tokens);
  keep_set(c.do_sample, fallback.do_sample);
  keep_set(c.num_beams, fallback.num_beams);
  keep_set(c.num_return_sequences, fallback.num_return_sequences);
  keep_set(c.length_penalty, fallback.length_penalty);
  keep_set(c.early_stopping, fallback.early_stopping);
  keep_set(c.use_cache, fallback.use_cache);
  keep_set(c.temperature, fallback.temperature);
  keep_set(c.top_k, fallback.top_k);
  keep_set(c.top_p, fallback.top_p);
  keep_set(c.min_p, fallback.min_p);
  keep_set(c.repetition_penalty, fallback.repetition_penalty);
  keep_set(c.no_repeat_ngram_size, fallback.no_repeat_ngram_size);
  keep_set(c.bad_words_ids, fallback.bad_words_ids);
  keep_set(c.forced_bos_token_id, fallback.forced_bos_token_id);
  keep_set(c.forced_eos_token_id, fallback.forced_eos_token_id);
  keep_set(c.suppress_tokens, fallback.suppress_tokens);
  keep_set(c.begin_suppress_tokens, fallback.begin_suppress_tokens);
  keep_set(c.remove_invalid_values, fallback.remove_invalid_values);
  keep_set(c.pad_token_id, fallback.pad_token_id);
  keep_set(c.bos_token_id, fallback.bos_token_id);
  keep_set(c.eos_token_id, fallback.eos_token_id);
  keep_set(c.decoder_start_token_id, fallback.decoder_start_token_id);
  for (const auto& [key, value] : fallback.other.items())
    if (!c.other.contains(key)) c.other[key] = value;
  return c;
}

GenerationConfig GenerationConfig::with_global_defaults() const {
  GenerationConfig defaults;
  defaults.max_length = 20;
  defaults.min_length = 0;
  defaults.do_sample = false;
  defaults.use_cache = true;
  defaults.early_stopping = false;
  defaults.num_beams = 1;
  defaults.temperature = 1.0;
  defaults.top_k = 50;
  defaults.top_p = 1.0;
  defaults.repetition_penalty = 1.0;
  defaults.length_penalty = 1.0;
  defaults.no_repeat_ngram_size = 0;
  defaults.num_return_sequences = 1;
  defaults.remove_invalid_values = false;
  defaults.other = json::object();
  return merged_over(defaults);
}

}  // namespace ctrainer::generation
