#pragma once
// The model and tokenizer of a run_clm run through the registries, as run_clm.py makes them:
// AutoConfig from --config_name or the model folder, or --model_type's default config with
// --config_overrides; AutoTokenizer from --tokenizer_name or the model folder; the model with
// the folder's weights or new ones. And the block size run_clm.py derives from them.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/models/model.h>
#include <ctrainer/models/model_config.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/tokenizers/tokenizer.h>

#include "lm_arguments.h"

namespace run_lm {

struct LmModel {
  std::shared_ptr<ctrainer::Model> model;
  std::shared_ptr<const ctrainer::ModelConfig> config;
  std::shared_ptr<ctrainer::Tokenizer> tokenizer;
};

/// HF's PretrainedConfig.update_from_string: "k=v,k2=v2" applied to `config`, each value read as
/// the type of the key's current value (bool: true/1/y/yes or false/0/n/no; int; float;
/// string). Throws ctrainer::ArgumentError naming --config_overrides and the key when the key is
/// not in the config or the value does not read as its type.
nlohmann::json apply_config_overrides(nlohmann::json config, const std::string& overrides);

/// Loads or creates the model of `task` and its tokenizer. Throws ctrainer::ArgumentError when
/// the tokenizer has more tokens than the model's vocab_size (transformers would resize the
/// embeddings; here the config says the size).
LmModel load_lm_model(const ModelArguments& model_args, ctrainer::ModelTask task);

/// run_clm.py's block size: --block_size capped at the tokenizer's model_max_length; unset, the
/// model_max_length, or min(1024, the model's positions) when that is larger (or unknown).
int64_t resolve_block_size(std::optional<int64_t> requested, const LmModel& lm);

/// run_mlm.py's max_seq_length: --max_seq_length capped at the tokenizer's model_max_length;
/// unset, the model_max_length capped at 1024 (a tokenizer without one: the model's positions,
/// at most 1024, where transformers would take 1024 and fail if the model has fewer). Throws
/// ctrainer::ArgumentError when the result is more than the model's positions (transformers fails
/// in the first forward instead).
int64_t resolve_max_seq_length(std::optional<int64_t> requested, const LmModel& lm);

}  // namespace run_lm
