#include <ctrainer/models/gpt2/gpt2_config.h>

#include <ctrainer/models/activations.h>

namespace ctrainer {
namespace {

using json = nlohmann::json;
using namespace config_json;

const std::vector<std::string> kGpt2KnownKeys = {"model_type",
                                                 "vocab_size",
                                                 "n_positions",
                                                 "n_embd",
                                                 "n_layer",
                                                 "n_head",
                                                 "n_inner",
                                                 "activation_function",
                                                 "resid_pdrop",
                                                 "embd_pdrop",
                                                 "attn_pdrop",
                                                 "layer_norm_epsilon",
                                                 "initializer_range",
                                                 "scale_attn_weights",
                                                 "scale_attn_by_inverse_layer_idx",
                                                 "reorder_and_upcast_attn",
                                                 "tie_word_embeddings",
                                                 "use_cache",
                                                 "bos_token_id",
                                                 "eos_token_id",
                                                 "pad_token_id",
                                                 "add_cross_attention",
                                                 "hidden_size",
                                                 "num_hidden_layers",
                                                 "num_attention_heads",
                                                 "max_position_embeddings"};

// HF's attribute_map: a config may use the generic name; the GPT-2 name wins when both appear.
void read_aliased(const json& j, const char* gpt2_key, const char* generic_key, int64_t& out,
                  const std::string& source) {
  read_int(j, generic_key, out, source);
  read_int(j, gpt2_key, out, source);
}

}  // namespace

void GPT2Config::validate(const std::string& source) const {
  check_positive(source, "vocab_size", vocab_size);
  check_positive(source, "n_positions", n_positions);
  check_positive(source, "n_embd", n_embd);
  check_positive(source, "n_layer", n_layer);
  check_positive(source, "n_head", n_head);
  if (n_inner) check_positive(source, "n_inner", *n_inner);
  if (n_embd % n_head != 0)
    fail(source, "'n_embd' (" + std::to_string(n_embd) + ") must be a multiple of 'n_head' (" +
                     std::to_string(n_head) + ")");
  if (!is_supported_activation(activation_function))
    fail(source, "'activation_function' \"" + activation_function +
                     "\" is not supported; use gelu_new, gelu, relu or silu");
  check_probability(source, "resid_pdrop", resid_pdrop);
  check_probability(source, "embd_pdrop", embd_pdrop);
  check_probability(source, "attn_pdrop", attn_pdrop);
  if (!(layer_norm_epsilon > 0.0)) fail(source, "'layer_norm_epsilon' must be > 0");
  if (!(initializer_range >= 0.0)) fail(source, "'initializer_range' must be >= 0");
  check_token_id(source, "pad_token_id", pad_token_id, vocab_size);
  TaskHeadFields::validate(source);
}

json GPT2Config::to_json() const {
  json j = extra.is_object() ? extra : json::object();
  j["model_type"] = "gpt2";
  j["vocab_size"] = vocab_size;
  j["n_positions"] = n_positions;
  j["n_embd"] = n_embd;
  j["n_layer"] = n_layer;
  j["n_head"] = n_head;
  j["n_inner"] = optional_json(n_inner);
  j["activation_function"] = activation_function;
  j["resid_pdrop"] = resid_pdrop;
  j["embd_pdrop"] = embd_pdrop;
  j["attn_pdrop"] = attn_pdrop;
  j["layer_norm_epsilon"] = layer_norm_epsilon;
  j["initializer_range"] = initializer_range;
  j["scale_attn_weights"] = scale_attn_weights;
  j["scale_attn_by_inverse_layer_idx"] = scale_attn_by_inverse_layer_idx;
  j["reorder_and_upcast_attn"] = reorder_and_upcast_attn;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["use_cache"] = use_cache;
  j["add_cross_attention"] = false;
  j["bos_token_id"] = optional_json(bos_token_id);
  j["eos_token_id"] = eos_token_id;
  j["pad_token_id"] = optional_json(pad_token_id);
  TaskHeadFields::write(j);
  return j;
}

GPT2Config GPT2Config::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "a config must be a JSON object, got " + shown(j));
  check_model_type(j, "gpt2", "GPT-2", source);
  GPT2Config c;
  read_int(j, "vocab_size", c.vocab_size, source);
  read_aliased(j, "n_positions", "max_position_embeddings", c.n_positions, source);
  read_aliased(j, "n_embd", "hidden_size", c.n_embd, source);
  read_aliased(j, "n_layer", "num_hidden_layers", c.n_layer, source);
  read_aliased(j, "n_head", "num_attention_heads", c.n_head, source);
  read_optional(j, "n_inner", c.n_inner, source);
  read_string(j, "activation_function", c.activation_function, source);
  read_double(j, "resid_pdrop", c.resid_pdrop, source);
  read_double(j, "embd_pdrop", c.embd_pdrop, source);
  read_double(j, "attn_pdrop", c.attn_pdrop, source);
  read_double(j, "layer_norm_epsilon", c.layer_norm_epsilon, source);
  read_double(j, "initializer_range", c.initializer_range, source);
  read_bool(j, "scale_attn_weights", c.scale_attn_weights, source);
  read_bool(j, "scale_attn_by_inverse_layer_idx", c.scale_attn_by_inverse_layer_idx, source);
  read_bool(j, "reorder_and_upcast_attn", c.reorder_and_upcast_attn, source);
  read_bool(j, "tie_word_embeddings", c.tie_word_embeddings, source);
  read_bool(j, "use_cache", c.use_cache, source);
  read_optional(j, "bos_token_id", c.bos_token_id, source);
  read_token_ids(j, "eos_token_id", c.eos_token_id, source);
  read_optional(j, "pad_token_id", c.pad_token_id, source);
  bool cross_attention = false;
  read_bool(j, "add_cross_attention", cross_attention, source);
  if (cross_attention)
    fail(source,
         "'add_cross_attention' true is not supported: ctrainer's GPT-2 has no "
         "cross-attention (no encoder feeds it); set it to false");
  c.TaskHeadFields::read(j, source);
  c.extra = unknown_keys(j, kGpt2KnownKeys);
  c.validate(source);
  return c;
}

}  // namespace ctrainer
