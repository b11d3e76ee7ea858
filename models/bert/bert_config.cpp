#include <ctrainer/models/bert/bert_config.h>

#include <set>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>

namespace ctrainer {
namespace {

using json = nlohmann::json;
using namespace config_json;

const std::set<std::string> kHiddenActs = {"gelu", "gelu_new", "relu"};

// The keys from_json() consumes; everything else goes to `extra`.
const std::vector<std::string> kBertKnownKeys = {"model_type",
                                                 "vocab_size",
                                                 "hidden_size",
                                                 "num_hidden_layers",
                                                 "num_attention_heads",
                                                 "intermediate_size",
                                                 "hidden_act",
                                                 "hidden_dropout_prob",
                                                 "attention_probs_dropout_prob",
                                                 "max_position_embeddings",
                                                 "type_vocab_size",
                                                 "layer_norm_eps",
                                                 "initializer_range",
                                                 "pad_token_id",
                                                 "classifier_dropout"};

}  // namespace

void BertConfig::validate(const std::string& source) const {
  check_positive(source, "vocab_size", vocab_size);
  check_positive(source, "hidden_size", hidden_size);
  check_positive(source, "num_hidden_layers", num_hidden_layers);
  check_positive(source, "num_attention_heads", num_attention_heads);
  check_positive(source, "intermediate_size", intermediate_size);
  check_positive(source, "max_position_embeddings", max_position_embeddings);
  check_positive(source, "type_vocab_size", type_vocab_size);
  if (hidden_size % num_attention_heads != 0)
    fail(source, "'hidden_size' (" + std::to_string(hidden_size) +
                     ") must be a multiple of 'num_attention_heads' (" +
                     std::to_string(num_attention_heads) + ")");
  if (kHiddenActs.count(hidden_act) == 0)
    fail(source,
         "'hidden_act' \"" + hidden_act + "\" is not supported; use gelu, gelu_new or relu");
  check_probability(source, "hidden_dropout_prob", hidden_dropout_prob);
  check_probability(source, "attention_probs_dropout_prob", attention_probs_dropout_prob);
  if (classifier_dropout) check_probability(source, "classifier_dropout", *classifier_dropout);
  if (!(layer_norm_eps > 0.0)) fail(source, "'layer_norm_eps' must be > 0");
  if (!(initializer_range >= 0.0)) fail(source, "'initializer_range' must be >= 0");
  check_token_id(source, "pad_token_id", pad_token_id, vocab_size);
  TaskHeadFields::validate(source);
}

nlohmann::json BertConfig::to_json() const {
  json j = extra.is_object() ? extra : json::object();
  j["model_type"] = "bert";
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["intermediate_size"] = intermediate_size;
  j["hidden_act"] = hidden_act;
  j["hidden_dropout_prob"] = hidden_dropout_prob;
  j["attention_probs_dropout_prob"] = attention_probs_dropout_prob;
  j["max_position_embeddings"] = max_position_embeddings;
  j["type_vocab_size"] = type_vocab_size;
  j["layer_norm_eps"] = layer_norm_eps;
  j["initializer_range"] = initializer_range;
  j["pad_token_id"] = optional_json(pad_token_id);
  j["classifier_dropout"] = classifier_dropout ? json(*classifier_dropout) : json(nullptr);
  TaskHeadFields::write(j);
  return j;
}

BertConfig BertConfig::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "a config must be a JSON object, got " + shown(j));
  BertConfig c;
  check_model_type(j, "bert", "BERT", source);
  read_int(j, "vocab_size", c.vocab_size, source);
  read_int(j, "hidden_size", c.hidden_size, source);
  read_int(j, "num_hidden_layers", c.num_hidden_layers, source);
  read_int(j, "num_attention_heads", c.num_attention_heads, source);
  read_int(j, "intermediate_size", c.intermediate_size, source);
  read_string(j, "hidden_act", c.hidden_act, source);
  read_double(j, "hidden_dropout_prob", c.hidden_dropout_prob, source);
  read_double(j, "attention_probs_dropout_prob", c.attention_probs_dropout_prob, source);
  read_int(j, "max_position_embeddings", c.max_position_embeddings, source);
  read_int(j, "type_vocab_size", c.type_vocab_size, source);
  read_double(j, "layer_norm_eps", c.layer_norm_eps, source);
  read_double(j, "initializer_range", c.initializer_range, source);
  read_optional(j, "pad_token_id", c.pad_token_id, source);
  read_optional(j, "classifier_dropout", c.classifier_dropout, source);
  c.TaskHeadFields::read(j, source);
  // HF accepts only absolute position embeddings for the BERT classes we implement.
  if (j.contains("position_embedding_type") && j.at("position_embedding_type") != "absolute")
    fail(source, "'position_embedding_type' " + shown(j.at("position_embedding_type")) +
                     " is not supported; only \"absolute\"");
  c.extra = unknown_keys(j, kBertKnownKeys);
  c.validate(source);
  return c;
}

BertConfig BertConfig::from_json_file(const std::string& path) {
  return from_json(read_config_file(path), "model config " + path);
}

void BertConfig::save(const std::string& path) const {
  write_json_file(path, to_json());
}

}  // namespace ctrainer
