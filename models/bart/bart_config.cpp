#include <ctrainer/models/bart/bart_config.h>

#include <ctrainer/models/activations.h>

namespace ctrainer {
namespace {

using json = nlohmann::json;
using namespace config_json;

const std::vector<std::string> kBartKnownKeys = {"model_type",
                                                 "vocab_size",
                                                 "max_position_embeddings",
                                                 "d_model",
                                                 "encoder_layers",
                                                 "decoder_layers",
                                                 "encoder_ffn_dim",
                                                 "decoder_ffn_dim",
                                                 "encoder_attention_heads",
                                                 "decoder_attention_heads",
                                                 "encoder_layerdrop",
                                                 "decoder_layerdrop",
                                                 "activation_function",
                                                 "dropout",
                                                 "attention_dropout",
                                                 "activation_dropout",
                                                 "init_std",
                                                 "classifier_dropout",
                                                 "scale_embedding",
                                                 "use_cache",
                                                 "pad_token_id",
                                                 "bos_token_id",
                                                 "eos_token_id",
                                                 "decoder_start_token_id",
                                                 "forced_eos_token_id",
                                                 "tie_word_embeddings",
                                                 "hidden_size",
                                                 "num_attention_heads",
                                                 "num_hidden_layers",
                                                 "is_encoder_decoder"};

void read_alias(const json& j, const char* own, const char* alias, int64_t& out,
                const std::string& source) {
  read_int(j, j.contains(own) ? own : alias, out, source);
}

}  // namespace

void BartConfig::validate(const std::string& source) const {
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"vocab_size", vocab_size},
                                   {"max_position_embeddings", max_position_embeddings},
                                   {"d_model", d_model},
                                   {"encoder_layers", encoder_layers},
                                   {"decoder_layers", decoder_layers},
                                   {"encoder_ffn_dim", encoder_ffn_dim},
                                   {"decoder_ffn_dim", decoder_ffn_dim},
                                   {"encoder_attention_heads", encoder_attention_heads},
                                   {"decoder_attention_heads", decoder_attention_heads}})
    check_positive(source, key, value);
  for (const auto& [key, heads] :
       {std::pair<const char*, int64_t>{"encoder_attention_heads", encoder_attention_heads},
        {"decoder_attention_heads", decoder_attention_heads}})
    if (d_model % heads != 0)
      fail(source, "'d_model' (" + std::to_string(d_model) + ") must be a multiple of '" + key +
                       "' (" + std::to_string(heads) + ")");
  if (!is_supported_activation(activation_function))
    fail(source, "'activation_function' \"" + activation_function +
                     "\" is not supported; use gelu, gelu_new, relu, silu or swish");
  for (const auto& [key, p] : {std::pair<const char*, double>{"dropout", dropout},
                               {"attention_dropout", attention_dropout},
                               {"activation_dropout", activation_dropout},
                               {"encoder_layerdrop", encoder_layerdrop},
                               {"decoder_layerdrop", decoder_layerdrop},
                               {"classifier_dropout", classifier_dropout}})
    check_probability(source, key, p);
  if (!(init_std >= 0.0)) fail(source, "'init_std' must be >= 0");
  check_token_id(source, "pad_token_id", pad_token_id, vocab_size);
  check_token_id(source, "decoder_start_token_id", decoder_start_token_id, vocab_size);
  TaskHeadFields::validate(source);
}

json BartConfig::to_json() const {
  json j = extra.is_object() ? extra : json::object();
  j["model_type"] = "bart";
  j["vocab_size"] = vocab_size;
  j["max_position_embeddings"] = max_position_embeddings;
  j["d_model"] = d_model;
  j["encoder_layers"] = encoder_layers;
  j["decoder_layers"] = decoder_layers;
  j["encoder_ffn_dim"] = encoder_ffn_dim;
  j["decoder_ffn_dim"] = decoder_ffn_dim;
  j["encoder_attention_heads"] = encoder_attention_heads;
  j["decoder_attention_heads"] = decoder_attention_heads;
  j["encoder_layerdrop"] = encoder_layerdrop;
  j["decoder_layerdrop"] = decoder_layerdrop;
  j["activation_function"] = activation_function;
  j["dropout"] = dropout;
  j["attention_dropout"] = attention_dropout;
  j["activation_dropout"] = activation_dropout;
  j["init_std"] = init_std;
  j["classifier_dropout"] = classifier_dropout;
  j["scale_embedding"] = scale_embedding;
  j["use_cache"] = use_cache;
  j["pad_token_id"] = optional_json(pad_token_id);
  j["bos_token_id"] = optional_json(bos_token_id);
  j["eos_token_id"] = eos_token_id;
  j["decoder_start_token_id"] = optional_json(decoder_start_token_id);
  j["forced_eos_token_id"] = forced_eos_token_id;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["is_encoder_decoder"] = true;
  TaskHeadFields::write(j);
  return j;
}

BartConfig BartConfig::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "a config must be a JSON object, got " + shown(j));
  check_model_type(j, "bart", "BART", source);
  BartConfig c;
  read_int(j, "vocab_size", c.vocab_size, source);
  read_int(j, "max_position_embeddings", c.max_position_embeddings, source);
  read_alias(j, "d_model", "hidden_size", c.d_model, source);
  read_alias(j, "encoder_layers", "num_hidden_layers", c.encoder_layers, source);
  read_int(j, "decoder_layers", c.decoder_layers, source);
  read_int(j, "encoder_ffn_dim", c.encoder_ffn_dim, source);
  read_int(j, "decoder_ffn_dim", c.decoder_ffn_dim, source);
  read_alias(j, "encoder_attention_heads", "num_attention_heads", c.encoder_attention_heads,
             source);
  read_int(j, "decoder_attention_heads", c.decoder_attention_heads, source);
  read_double(j, "encoder_layerdrop", c.encoder_layerdrop, source);
  read_double(j, "decoder_layerdrop", c.decoder_layerdrop, source);
  read_string(j, "activation_function", c.activation_function, source);
  read_double(j, "dropout", c.dropout, source);
  read_double(j, "attention_dropout", c.attention_dropout, source);
  read_double(j, "activation_dropout", c.activation_dropout, source);
  read_double(j, "init_std", c.init_std, source);
  read_double(j, "classifier_dropout", c.classifier_dropout, source);
  read_bool(j, "scale_embedding", c.scale_embedding, source);
  read_bool(j, "use_cache", c.use_cache, source);
  if (j.contains("pad_token_id")) read_optional(j, "pad_token_id", c.pad_token_id, source);
  if (j.contains("bos_token_id")) read_optional(j, "bos_token_id", c.bos_token_id, source);
  read_token_ids(j, "eos_token_id", c.eos_token_id, source);
  if (j.contains("decoder_start_token_id"))
    read_optional(j, "decoder_start_token_id", c.decoder_start_token_id, source);
  read_token_ids(j, "forced_eos_token_id", c.forced_eos_token_id, source);
  read_bool(j, "tie_word_embeddings", c.tie_word_embeddings, source);
  // mBART's and PEGASUS's pre-layer-norm layout is another architecture, not a BART setting.
  for (const char* key : {"normalize_before", "add_final_layer_norm"})
    if (j.contains(key) && j.at(key) == true)
      fail(source, std::string("'") + key +
                       "' true is mBART's layout, which ctrainer does not build; BART has "
                       "post-layer-norm layers");
  c.TaskHeadFields::read(j, source);
  c.extra = unknown_keys(j, kBartKnownKeys);
  c.validate(source);
  return c;
}

}  // namespace ctrainer
