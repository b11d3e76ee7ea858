#pragma once
/// \file The model registry: config.json's model_type (or, without one, its architectures) ->
/// the family's config parser and model factories, with transformers' Auto* semantics
/// (AutoConfig.from_pretrained, AutoModelFor<Task>.from_config / from_pretrained).
///
/// A new family plugs in here and nowhere else: it writes one register function that adds a
/// ModelFamily (see models/bert/bert_family.cpp) and lists it in builtin_families.cpp, or a
/// program adds its own family with ModelRegistry::global().add() before loading models.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/models/model.h>
#include <ctrainer/models/model_config.h>

namespace ctrainer {

/// The task a head serves, as transformers' AutoModelFor<Task> classes name them.
enum class ModelTask {
  kBase,                    ///< AutoModel: the bare encoder/decoder.
  kSequenceClassification,  ///< AutoModelForSequenceClassification
  kTokenClassification,     ///< AutoModelForTokenClassification
  kQuestionAnswering,       ///< AutoModelForQuestionAnswering
  kMaskedLM,                ///< AutoModelForMaskedLM
  kCausalLM,                ///< AutoModelForCausalLM
  kSeq2SeqLM,               ///< AutoModelForSeq2SeqLM
};

/// "AutoModelForSequenceClassification", ... (the Auto class of `task`).
std::string auto_class_name(ModelTask task);

/// One model class of a family ("BertForSequenceClassification").
struct ModelArchitecture {
  /// transformers' class name, as written in config.json's architectures.
  std::string name;
  ModelTask task = ModelTask::kBase;
  /// A model of `config` with new weights (HF's initialisation from the global generator).
  std::function<std::shared_ptr<Model>(const ModelConfig& config)> create;
  /// A model of `config` with the weights of `path` (a folder or .safetensors file); what the
  /// checkpoint lacks is initialised, as transformers' from_pretrained does.
  std::function<std::shared_ptr<Model>(const ModelConfig& config, const std::string& path,
                                       bool ignore_mismatched_sizes)>
      from_pretrained;
};

/// A model family: one model_type, its config parser, its architectures.
struct ModelFamily {
  std::string model_type;
  /// Parses a config.json object of this family; throws ArgumentError naming `source` and the key.
  std::function<std::unique_ptr<ModelConfig>(const nlohmann::json& json, const std::string& source)>
      parse_config;
  std::vector<ModelArchitecture> architectures;
};

class ModelRegistry {
 public:
  /// The process-wide registry, holding the built-in families (builtin_families.cpp).
  static ModelRegistry& global();

  /// Adds `family`; throws std::invalid_argument when its model_type or one of its architecture
  /// names is registered already, or it lacks a parser.
  void add(ModelFamily family);

  /// The family of `model_type`; throws ArgumentError naming `source` and listing the known
  /// model types when there is none.
  const ModelFamily& family(std::string_view model_type, const std::string& source) const;
  /// The family offering architecture `name`, or nullptr.
  const ModelFamily* family_of_architecture(std::string_view name) const;
  /// The known model types, sorted.
  std::vector<std::string> model_types() const;

  /// `family`'s head for `task`; throws ArgumentError naming `source` and the tasks it has.
  const ModelArchitecture& architecture(const ModelFamily& family, ModelTask task,
                                        const std::string& source) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<ModelFamily>> families_;  // stable addresses for the references
};

/// Registers the families built into the library (called once by ModelRegistry::global()).
void register_builtin_model_families(ModelRegistry& registry);

/// transformers' AutoConfig.
class AutoConfig {
 public:
  /// Reads `path` (a config.json file, or a folder holding one). The family is config.json's
  /// model_type or, when it has none, the family of its first known architectures entry; neither
  /// is an ArgumentError naming the file and listing the known model types.
  static std::unique_ptr<ModelConfig> from_pretrained(const std::string& path);
  /// The same for a parsed config.json object; `source` names it in errors.
  static std::unique_ptr<ModelConfig> from_json(const nlohmann::json& json,
                                                const std::string& source);
};

/// transformers' AutoModel / AutoModelFor<Task>.
class AutoModel {
 public:
  /// A model of `config` for `task`, with new weights.
  static std::shared_ptr<Model> from_config(const ModelConfig& config, ModelTask task);
  /// A model of `config` for `task` with the weights of `path` (a folder or .safetensors file).
  static std::shared_ptr<Model> from_pretrained(const std::string& path, const ModelConfig& config,
                                                ModelTask task,
                                                bool ignore_mismatched_sizes = false);
  /// from_pretrained with the folder's own config.json.
  static std::shared_ptr<Model> from_pretrained(const std::string& path, ModelTask task);
};

}  // namespace ctrainer
