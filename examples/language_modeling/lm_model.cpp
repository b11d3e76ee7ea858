#include "lm_model.h"

#include <algorithm>
#include <filesystem>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>
#include <ctrainer/models/tokenizers/pipeline/pretrained_tokenizer_fast.h>
#include <ctrainer/models/tokenizers/tokenizer_registry.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace run_lm {
namespace {
namespace fs = std::filesystem;
using ctrainer::ArgumentError;

[[noreturn]] void bad_override(const std::string& item, const std::string& why) {
  throw ArgumentError("--config_overrides: '" + item + "' " + why);
}

nlohmann::json read_override(const nlohmann::json& current, const std::string& item,
                             const std::string& value) {
  try {
    if (current.is_boolean()) {
      const std::string v = ctrainer::lower(value);
      if (v == "true" || v == "1" || v == "y" || v == "yes") return true;
      if (v == "false" || v == "0" || v == "n" || v == "no") return false;
      bad_override(item, "is not a boolean (true/1/y/yes or false/0/n/no)");
    }
    size_t used = 0;
    if (current.is_number_integer()) {
      const long long n = std::stoll(value, &used);
      if (used == value.size()) return n;
    } else if (current.is_number_float()) {
      const double x = std::stod(value, &used);
      if (used == value.size()) return x;
    } else if (current.is_string()) {
      return value;
    } else {
      bad_override(item, "sets a key that is not an int, float, bool or string in the config");
    }
  } catch (const std::logic_error&) {  // stoll / stod: not a number, or out of range
  }
  bad_override(item,
               std::string("is not ") + (current.is_number_integer() ? "an integer" : "a number"));
}

std::optional<int64_t> model_max_length(const ctrainer::Tokenizer& tokenizer) {
  if (const auto* fast = dynamic_cast<const ctrainer::PreTrainedTokenizerFast*>(&tokenizer))
    return fast->model_max_length();
  return std::nullopt;
}

}  // namespace

nlohmann::json apply_config_overrides(nlohmann::json config, const std::string& overrides) {
  if (overrides.empty()) return config;
  for (const std::string& item : ctrainer::split(overrides, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || item.find('=', eq + 1) != std::string::npos)
      bad_override(item, "is not key=value");
    const std::string key = item.substr(0, eq);
    if (!config.contains(key))
      bad_override(item, "names a key that isn't in the original config dict");
    config[key] = read_override(config[key], item, item.substr(eq + 1));
  }
  return config;
}

LmModel load_lm_model(const ModelArguments& model_args, ctrainer::ModelTask task) {
  auto log = ctrainer::logging::logger();
  LmModel lm;
  std::unique_ptr<ctrainer::ModelConfig> config;
  std::string config_source;
  if (!model_args.config_name.empty()) {
    config_source = model_args.config_name;
    config = ctrainer::AutoConfig::from_pretrained(model_args.config_name);
  } else if (!model_args.model_name_or_path.empty()) {
    config_source = model_args.model_name_or_path;
    config = ctrainer::AutoConfig::from_pretrained(model_args.model_name_or_path);
  } else {
    config_source = "--model_type " + model_args.model_type;
    const auto defaults = ctrainer::AutoConfig::from_json(
        nlohmann::json{{"model_type", model_args.model_type}}, config_source);
    log->warn("You are instantiating a new config instance from scratch.");
    nlohmann::json json = defaults->to_json();
    if (!model_args.config_overrides.empty()) {
      log->info("Overriding config: {}", model_args.config_overrides);
      json = apply_config_overrides(json, model_args.config_overrides);
      config_source += " --config_overrides " + model_args.config_overrides;
    }
    config = ctrainer::AutoConfig::from_json(json, config_source);
  }
  config->validate(config_source);
  const std::string tokenizer_source =
      model_args.tokenizer_name.empty() ? model_args.model_name_or_path : model_args.tokenizer_name;
  lm.tokenizer = ctrainer::AutoTokenizer::from_pretrained(tokenizer_source);
  if (lm.tokenizer->vocab_size() > config->vocab_size())
    throw ArgumentError(config_source + ": vocab_size " + std::to_string(config->vocab_size()) +
                        " is smaller than the tokenizer " + tokenizer_source + " (" +
                        std::to_string(lm.tokenizer->vocab_size()) +
                        " tokens); use a config whose vocab_size covers it (from scratch: "
                        "--config_overrides vocab_size=" +
                        std::to_string(lm.tokenizer->vocab_size()) + ")");
  if (!model_args.model_name_or_path.empty()) {
    lm.model = ctrainer::AutoModel::from_pretrained(model_args.model_name_or_path, *config, task);
  } else {
    lm.model = ctrainer::AutoModel::from_config(*config, task);
    log->info("Training new model from scratch - Total size={:.2f}M params",
              static_cast<double>(lm.model->num_parameters()) / (1 << 20));
  }
  lm.config = std::move(config);
  return lm;
}

int64_t resolve_block_size(std::optional<int64_t> requested, const LmModel& lm) {
  auto log = ctrainer::logging::logger();
  const std::optional<int64_t> tokenizer_limit = model_max_length(*lm.tokenizer);
  const int64_t positions = lm.config->max_positions().value_or(1024);
  if (!requested) {
    if (tokenizer_limit && *tokenizer_limit <= positions) return *tokenizer_limit;
    const int64_t block = positions > 0 ? std::min<int64_t>(1024, positions) : 1024;
    log->warn(
        "The tokenizer picked seems to have a very large `model_max_length` ({}). Using "
        "block_size={} instead. You can change that default value by passing --block_size xxx.",
        tokenizer_limit ? std::to_string(*tokenizer_limit) : std::string("unset"), block);
    return block;
  }
  if (tokenizer_limit && *requested > *tokenizer_limit) {
    log->warn(
        "The block_size passed ({}) is larger than the maximum length for the model ({}). Using "
        "block_size={}.",
        *requested, *tokenizer_limit, *tokenizer_limit);
    return *tokenizer_limit;
  }
  return *requested;
}

int64_t resolve_max_seq_length(std::optional<int64_t> requested, const LmModel& lm) {
  auto log = ctrainer::logging::logger();
  const std::optional<int64_t> tokenizer_limit = model_max_length(*lm.tokenizer);
  int64_t length = 0;
  const std::optional<int64_t> positions = lm.config->max_positions();
  if (!requested && !tokenizer_limit && positions) {
    // transformers reads an unknown model_max_length as 1e30, picks 1024, and fails in the
    // first forward when the model has fewer positions: take what the model holds instead.
    length = std::min<int64_t>(1024, *positions);
    log->warn(
        "The tokenizer has no model_max_length. Picking max_seq_length={} (the model's "
        "positions, at most 1024). You can change that value by passing --max_seq_length xxx.",
        length);
  } else if (!requested) {
    length = tokenizer_limit.value_or(1024);
    if (length > 1024) {
      log->warn(
          "The tokenizer picked seems to have a very large `model_max_length` ({}). Picking 1024 "
          "instead. You can change that default value by passing --max_seq_length xxx.",
          length);
      length = 1024;
    }
  } else {
    length = *requested;
    if (tokenizer_limit && length > *tokenizer_limit) {
      log->warn(
          "The max_seq_length passed ({}) is larger than the maximum length for the model ({}). "
          "Using max_seq_length={}.",
          length, *tokenizer_limit, *tokenizer_limit);
      length = *tokenizer_limit;
    }
  }
  if (positions && length > *positions)
    throw ArgumentError("max_seq_length " + std::to_string(length) + " is more than the model's " +
                        std::to_string(*positions) +
                        " positions (max_position_embeddings): pass --max_seq_length " +
                        std::to_string(*positions) + " or less");
  return length;
}

}  // namespace run_lm
