#include <ctrainer/models/t5/t5_config.h>

#include <ctrainer/models/activations.h>

namespace ctrainer {
namespace {

using json = nlohmann::json;
using namespace config_json;

const std::vector<std::string> kT5KnownKeys = {"model_type",
                                               "vocab_size",
                                               "d_model",
                                               "d_kv",
                                               "d_ff",
                                               "num_layers",
                                               "num_decoder_layers",
                                               "num_heads",
                                               "relative_attention_num_buckets",
                                               "relative_attention_max_distance",
                                               "dropout_rate",
                                               "layer_norm_epsilon",
                                               "initializer_factor",
                                               "feed_forward_proj",
                                               "use_cache",
                                               "pad_token_id",
                                               "eos_token_id",
                                               "decoder_start_token_id",
                                               "tie_word_embeddings",
                                               "scale_decoder_outputs",
                                               "classifier_dropout",
                                               "hidden_size",
                                               "num_attention_heads",
                                               "num_hidden_layers",
                                               "head_dim",
                                               "dense_act_fn",
                                               "is_gated_act",
                                               "is_encoder_decoder",
                                               "is_decoder"};

// transformers' attribute_map: a generic name is read when the config lacks T5's own.
void read_alias(const json& j, const char* own, const char* alias, int64_t& out,
                const std::string& source) {
  if (j.contains(own))
    read_int(j, own, out, source);
  else
    read_int(j, alias, out, source);
}

}  // namespace

std::string T5Config::dense_act_fn() const {
  if (feed_forward_proj == "gated-gelu") return "gelu_new";  // transformers' special case
  const auto dash = feed_forward_proj.find('-');
  return dash == std::string::npos ? feed_forward_proj : feed_forward_proj.substr(dash + 1);
}

bool T5Config::is_gated_act() const {
  return feed_forward_proj.starts_with("gated-");
}

void T5Config::validate(const std::string& source) const {
  check_positive(source, "vocab_size", vocab_size);
  check_positive(source, "d_model", d_model);
  check_positive(source, "d_kv", d_kv);
  check_positive(source, "d_ff", d_ff);
  check_positive(source, "num_layers", num_layers);
  check_positive(source, "num_decoder_layers", num_decoder_layers);
  check_positive(source, "num_heads", num_heads);
  check_positive(source, "relative_attention_num_buckets", relative_attention_num_buckets);
  check_positive(source, "relative_attention_max_distance", relative_attention_max_distance);
  // The bucket formula divides by log(max_distance / max_exact), max_exact = buckets / 4 (the
  // decoder's / 2): it needs max_distance above both.
  if (relative_attention_max_distance <= relative_attention_num_buckets / 2)
    fail(source, "'relative_attention_max_distance' (" +
                     std::to_string(relative_attention_max_distance) +
                     ") must be more than half of 'relative_attention_num_buckets' (" +
                     std::to_string(relative_attention_num_buckets) + ")");
  const auto dash = feed_forward_proj.find('-');
  if ((dash != std::string::npos && !is_gated_act()) ||
      feed_forward_proj.find('-', dash == std::string::npos ? 0 : dash + 1) != std::string::npos ||
      !is_supported_activation(dense_act_fn()))
    fail(source, "'feed_forward_proj' \"" + feed_forward_proj +
                     "\" is not supported; use relu, gelu, gelu_new or silu, or gated-<one of "
                     "them> (gated-gelu for T5 v1.1 / FLAN-T5)");
  check_probability(source, "dropout_rate", dropout_rate);
  check_probability(source, "classifier_dropout", classifier_dropout);
  if (!(layer_norm_epsilon > 0.0)) fail(source, "'layer_norm_epsilon' must be > 0");
  if (!(initializer_factor >= 0.0)) fail(source, "'initializer_factor' must be >= 0");
  check_token_id(source, "pad_token_id", pad_token_id, vocab_size);
  check_token_id(source, "decoder_start_token_id", decoder_start_token_id, vocab_size);
  TaskHeadFields::validate(source);
}

json T5Config::to_json() const {
  json j = extra.is_object() ? extra : json::object();
  j["model_type"] = "t5";
  j["vocab_size"] = vocab_size;
  j["d_model"] = d_model;
  j["d_kv"] = d_kv;
  j["d_ff"] = d_ff;
  j["num_layers"] = num_layers;
  j["num_decoder_layers"] = num_decoder_layers;
  j["num_heads"] = num_heads;
  j["relative_attention_num_buckets"] = relative_attention_num_buckets;
  j["relative_attention_max_distance"] = relative_attention_max_distance;
  j["dropout_rate"] = dropout_rate;
  j["layer_norm_epsilon"] = layer_norm_epsilon;
  j["initializer_factor"] = initializer_factor;
  j["feed_forward_proj"] = feed_forward_proj;
  j["dense_act_fn"] = dense_act_fn();
  j["is_gated_act"] = is_gated_act();
  j["is_encoder_decoder"] = true;
  j["is_decoder"] = false;
  j["use_cache"] = use_cache;
  j["pad_token_id"] = optional_json(pad_token_id);
  j["eos_token_id"] = eos_token_id;
  j["decoder_start_token_id"] = optional_json(decoder_start_token_id);
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["scale_decoder_outputs"] = scale_decoder_outputs;
  j["classifier_dropout"] = classifier_dropout;
  TaskHeadFields::write(j);
  return j;
}

T5Config T5Config::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "a config must be a JSON object, got " + shown(j));
  check_model_type(j, "t5", "T5", source);
  T5Config c;
  read_int(j, "vocab_size", c.vocab_size, source);
  read_alias(j, "d_model", "hidden_size", c.d_model, source);
  read_alias(j, "d_kv", "head_dim", c.d_kv, source);
  read_int(j, "d_ff", c.d_ff, source);
  read_alias(j, "num_layers", "num_hidden_layers", c.num_layers, source);
  std::optional<int64_t> decoder_layers;
  read_optional(j, "num_decoder_layers", decoder_layers, source);
  c.num_decoder_layers = decoder_layers.value_or(c.num_layers);
  read_alias(j, "num_heads", "num_attention_heads", c.num_heads, source);
  read_int(j, "relative_attention_num_buckets", c.relative_attention_num_buckets, source);
  read_int(j, "relative_attention_max_distance", c.relative_attention_max_distance, source);
  read_double(j, "dropout_rate", c.dropout_rate, source);
  read_double(j, "layer_norm_epsilon", c.layer_norm_epsilon, source);
  read_double(j, "initializer_factor", c.initializer_factor, source);
  read_string(j, "feed_forward_proj", c.feed_forward_proj, source);
  read_bool(j, "use_cache", c.use_cache, source);
  if (j.contains("pad_token_id")) read_optional(j, "pad_token_id", c.pad_token_id, source);
  read_token_ids(j, "eos_token_id", c.eos_token_id, source);
  read_optional(j, "decoder_start_token_id", c.decoder_start_token_id, source);
  read_bool(j, "tie_word_embeddings", c.tie_word_embeddings, source);
  c.scale_decoder_outputs = c.tie_word_embeddings;
  read_bool(j, "scale_decoder_outputs", c.scale_decoder_outputs, source);
  read_double(j, "classifier_dropout", c.classifier_dropout, source);
  if (j.contains("is_decoder") && j.at("is_decoder") == true)
    fail(source,
         "'is_decoder' true (a T5 decoder alone) is not supported; ctrainer builds "
         "T5ForConditionalGeneration");
  c.TaskHeadFields::read(j, source);
  c.extra = unknown_keys(j, kT5KnownKeys);
  c.validate(source);
  return c;
}

}  // namespace ctrainer
