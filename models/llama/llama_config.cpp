#include <ctrainer/models/llama/llama_config.h>

#include <ctrainer/models/activations.h>

namespace ctrainer {
namespace {

using json = nlohmann::json;
using namespace config_json;

const std::vector<std::string> kLlamaKnownKeys = {"model_type",
                                                  "vocab_size",
                                                  "hidden_size",
                                                  "intermediate_size",
                                                  "num_hidden_layers",
                                                  "num_attention_heads",
                                                  "num_key_value_heads",
                                                  "head_dim",
                                                  "hidden_act",
                                                  "max_position_embeddings",
                                                  "initializer_range",
                                                  "rms_norm_eps",
                                                  "use_cache",
                                                  "pad_token_id",
                                                  "bos_token_id",
                                                  "eos_token_id",
                                                  "tie_word_embeddings",
                                                  "rope_parameters",
                                                  "rope_theta",
                                                  "rope_scaling",
                                                  "attention_bias",
                                                  "attention_dropout",
                                                  "mlp_bias"};

// rope_parameters (transformers 5), else rope_scaling + rope_theta (older files; HF 5 converts
// them the same way). "type" is the old spelling of rope_type.
RopeParameters read_rope(const json& j, const std::string& source) {
  RopeParameters rope;
  json dict = json::object();
  if (j.contains("rope_parameters") && !j.at("rope_parameters").is_null()) {
    dict = j.at("rope_parameters");
    if (!dict.is_object()) fail(source, "'rope_parameters' must be an object, got " + shown(dict));
  } else {
    if (j.contains("rope_scaling") && !j.at("rope_scaling").is_null()) {
      dict = j.at("rope_scaling");
      if (!dict.is_object()) fail(source, "'rope_scaling' must be an object, got " + shown(dict));
    }
    if (j.contains("rope_theta")) dict["rope_theta"] = j.at("rope_theta");
  }
  const std::string where = source + ": rope_parameters";
  if (dict.contains("type") && !dict.contains("rope_type")) dict["rope_type"] = dict["type"];
  read_string(dict, "rope_type", rope.rope_type, where);
  read_double(dict, "rope_theta", rope.rope_theta, where);
  read_double(dict, "factor", rope.factor, where);
  read_double(dict, "low_freq_factor", rope.low_freq_factor, where);
  read_double(dict, "high_freq_factor", rope.high_freq_factor, where);
  read_int(dict, "original_max_position_embeddings", rope.original_max_position_embeddings, where);
  if (rope.rope_type != "default" && rope.rope_type != "linear" && rope.rope_type != "llama3")
    fail(where, "rope_type \"" + rope.rope_type +
                    "\" is not supported; ctrainer builds default, linear and llama3");
  if (rope.rope_type != "default" && !dict.contains("factor"))
    fail(where, "rope_type " + rope.rope_type + " needs 'factor'");
  if (rope.rope_type == "llama3")
    for (const char* key :
         {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
      if (!dict.contains(key)) fail(where, std::string("rope_type llama3 needs '") + key + "'");
  if (dict.contains("partial_rotary_factor") && dict["partial_rotary_factor"] != 1.0)
    fail(where, "'partial_rotary_factor' other than 1.0 is not supported for Llama");
  rope.json = dict;
  return rope;
}

json write_rope(const RopeParameters& rope) {
  json dict = rope.json.is_object() ? rope.json : json::object();
  dict["rope_type"] = rope.rope_type;
  dict["rope_theta"] = rope.rope_theta;
  if (rope.rope_type != "default") dict["factor"] = rope.factor;
  if (rope.rope_type == "llama3") {
    dict["low_freq_factor"] = rope.low_freq_factor;
    dict["high_freq_factor"] = rope.high_freq_factor;
    dict["original_max_position_embeddings"] = rope.original_max_position_embeddings;
  }
  return dict;
}

}  // namespace

void LlamaConfig::validate(const std::string& source) const {
  check_positive(source, "vocab_size", vocab_size);
  check_positive(source, "hidden_size", hidden_size);
  check_positive(source, "intermediate_size", intermediate_size);
  check_positive(source, "num_hidden_layers", num_hidden_layers);
  check_positive(source, "num_attention_heads", num_attention_heads);
  check_positive(source, "num_key_value_heads", num_key_value_heads);
  check_positive(source, "head_dim", head_dim);
  check_positive(source, "max_position_embeddings", max_position_embeddings);
  if (hidden_size % num_attention_heads != 0)
    fail(source, "'hidden_size' (" + std::to_string(hidden_size) +
                     ") must be a multiple of 'num_attention_heads' (" +
                     std::to_string(num_attention_heads) + ")");
  if (num_attention_heads % num_key_value_heads != 0)
    fail(source, "'num_attention_heads' (" + std::to_string(num_attention_heads) +
                     ") must be a multiple of 'num_key_value_heads' (" +
                     std::to_string(num_key_value_heads) + ")");
  if (head_dim % 2 != 0)
    fail(source,
         "'head_dim' (" + std::to_string(head_dim) + ") must be even for rotary embeddings");
  if (!is_supported_activation(hidden_act))
    fail(source,
         "'hidden_act' \"" + hidden_act + "\" is not supported; use silu, gelu, gelu_new or relu");
  check_probability(source, "attention_dropout", attention_dropout);
  if (!(rms_norm_eps > 0.0)) fail(source, "'rms_norm_eps' must be > 0");
  if (!(initializer_range >= 0.0)) fail(source, "'initializer_range' must be >= 0");
  if (!(rope.rope_theta > 0.0)) fail(source, "'rope_theta' must be > 0");
  if (!(rope.factor > 0.0)) fail(source, "rope_parameters 'factor' must be > 0");
  if (rope.rope_type == "llama3" &&
      (!(rope.low_freq_factor > 0.0) || !(rope.high_freq_factor > rope.low_freq_factor) ||
       rope.original_max_position_embeddings < 1))
    fail(source,
         "rope_parameters of llama3 need 0 < low_freq_factor < high_freq_factor and "
         "original_max_position_embeddings >= 1");
  check_token_id(source, "pad_token_id", pad_token_id, vocab_size);
  TaskHeadFields::validate(source);
}

json LlamaConfig::to_json() const {
  json j = extra.is_object() ? extra : json::object();
  j["model_type"] = "llama";
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  j["head_dim"] = head_dim;
  j["hidden_act"] = hidden_act;
  j["max_position_embeddings"] = max_position_embeddings;
  j["initializer_range"] = initializer_range;
  j["rms_norm_eps"] = rms_norm_eps;
  j["use_cache"] = use_cache;
  j["pad_token_id"] = optional_json(pad_token_id);
  j["bos_token_id"] = optional_json(bos_token_id);
  j["eos_token_id"] = eos_token_id;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["rope_parameters"] = write_rope(rope);
  j["attention_bias"] = attention_bias;
  j["attention_dropout"] = attention_dropout;
  j["mlp_bias"] = mlp_bias;
  TaskHeadFields::write(j);
  return j;
}

LlamaConfig LlamaConfig::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "a config must be a JSON object, got " + shown(j));
  check_model_type(j, "llama", "Llama", source);
  LlamaConfig c;
  read_int(j, "vocab_size", c.vocab_size, source);
  read_int(j, "hidden_size", c.hidden_size, source);
  read_int(j, "intermediate_size", c.intermediate_size, source);
  read_int(j, "num_hidden_layers", c.num_hidden_layers, source);
  read_int(j, "num_attention_heads", c.num_attention_heads, source);
  std::optional<int64_t> kv_heads, head_dim;
  read_optional(j, "num_key_value_heads", kv_heads, source);
  read_optional(j, "head_dim", head_dim, source);
  c.num_key_value_heads = kv_heads.value_or(c.num_attention_heads);
  c.head_dim =
      head_dim.value_or(c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0);
  read_string(j, "hidden_act", c.hidden_act, source);
  read_int(j, "max_position_embeddings", c.max_position_embeddings, source);
  read_double(j, "initializer_range", c.initializer_range, source);
  read_double(j, "rms_norm_eps", c.rms_norm_eps, source);
  read_bool(j, "use_cache", c.use_cache, source);
  read_optional(j, "pad_token_id", c.pad_token_id, source);
  read_optional(j, "bos_token_id", c.bos_token_id, source);
  read_token_ids(j, "eos_token_id", c.eos_token_id, source);
  read_bool(j, "tie_word_embeddings", c.tie_word_embeddings, source);
  c.rope = read_rope(j, source);
  read_bool(j, "attention_bias", c.attention_bias, source);
  read_double(j, "attention_dropout", c.attention_dropout, source);
  read_bool(j, "mlp_bias", c.mlp_bias, source);
  c.TaskHeadFields::read(j, source);
  c.extra = unknown_keys(j, kLlamaKnownKeys);
  c.validate(source);
  return c;
}

}  // namespace ctrainer
