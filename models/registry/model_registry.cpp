#include <ctrainer/models/registry/model_registry.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>

namespace ctrainer {

namespace {

std::string known_list(const std::vector<std::string>& names) {
  return names.empty() ? std::string("none") : join(names, ", ");
}

}  // namespace

std::string auto_class_name(ModelTask task) {
  switch (task) {
    case ModelTask::kBase:
      return "AutoModel";
    case ModelTask::kSequenceClassification:
      return "AutoModelForSequenceClassification";
    case ModelTask::kTokenClassification:
      return "AutoModelForTokenClassification";
    case ModelTask::kQuestionAnswering:
      return "AutoModelForQuestionAnswering";
    case ModelTask::kMaskedLM:
      return "AutoModelForMaskedLM";
    case ModelTask::kCausalLM:
      return "AutoModelForCausalLM";
    case ModelTask::kSeq2SeqLM:
      return "AutoModelForSeq2SeqLM";
  }
  return "AutoModel";
}

ModelRegistry& ModelRegistry::global() {
  static ModelRegistry* registry = [] {
    auto* r = new ModelRegistry();  // never destroyed: families may be used during exit
    register_builtin_model_families(*r);
    return r;
  }();
  return *registry;
}

void ModelRegistry::add(ModelFamily family) {
  if (family.model_type.empty() || !family.parse_config)
    throw std::invalid_argument("ModelRegistry::add: a family needs a model_type and a parser");
  std::lock_guard lock(mutex_);
  for (const auto& known : families_) {
    if (known->model_type == family.model_type)
      throw std::invalid_argument("ModelRegistry::add: model_type '" + family.model_type +
                                  "' is registered already");
    for (const auto& a : known->architectures)
      for (const auto& b : family.architectures)
        if (a.name == b.name)
          throw std::invalid_argument("ModelRegistry::add: architecture " + a.name +
                                      " is registered already (model_type '" + known->model_type +
                                      "')");
  }
  families_.push_back(std::make_unique<ModelFamily>(std::move(family)));
}

const ModelFamily& ModelRegistry::family(std::string_view model_type,
                                         const std::string& source) const {
  {
    std::lock_guard lock(mutex_);
    for (const auto& f : families_)
      if (f->model_type == model_type) return *f;
  }
  throw ArgumentError(source + ": unknown model_type \"" + std::string(model_type) +
                      "\"; this build knows: " + known_list(model_types()) +
                      " (register a family with ModelRegistry::add to load others)");
}

const ModelFamily* ModelRegistry::family_of_architecture(std::string_view name) const {
  std::lock_guard lock(mutex_);
  for (const auto& f : families_)
    for (const auto& a : f->architectures)
      if (a.name == name) return f.get();
  return nullptr;
}

std::vector<std::string> ModelRegistry::model_types() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& f : families_) out.push_back(f->model_type);
  std::sort(out.begin(), out.end());
  return out;
}

const ModelArchitecture& ModelRegistry::architecture(const ModelFamily& family, ModelTask task,
                                                     const std::string& source) const {
  std::vector<std::string> offered;
  for (const auto& a : family.architectures) {
    if (a.task == task) return a;
    offered.push_back(a.name + " (" + auto_class_name(a.task) + ")");
  }
  throw ArgumentError(source + ": model_type \"" + family.model_type + "\" has no head for " +
                      auto_class_name(task) + "; it has: " + known_list(offered));
}

std::unique_ptr<ModelConfig> AutoConfig::from_pretrained(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string file =
      fs::is_directory(path) ? (fs::path(path) / "config.json").string() : path;
  std::ifstream in(file);
  if (!in) throw ArgumentError("cannot read model config " + file + " (missing or unreadable)");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw ArgumentError("model config " + file + " is not valid JSON: " + e.what());
  }
  return from_json(json, "model config " + file);
}

std::unique_ptr<ModelConfig> AutoConfig::from_json(const nlohmann::json& json,
                                                   const std::string& source) {
  const ModelRegistry& registry = ModelRegistry::global();
  if (!json.is_object())
    throw ArgumentError(source + ": a config.json holds a JSON object, not " +
                        std::string(json.type_name()));
  if (json.contains("model_type")) {
    if (!json.at("model_type").is_string())
      throw ArgumentError(source + ": 'model_type' must be a string such as \"bert\"");
    const auto& family = registry.family(json.at("model_type").get<std::string>(), source);
    return family.parse_config(json, source);
  }
  // transformers needs model_type too; its architectures name the class as well, so use them.
  if (json.contains("architectures") && json.at("architectures").is_array())
    for (const auto& name : json.at("architectures"))
      if (name.is_string())
        if (const ModelFamily* family = registry.family_of_architecture(name.get<std::string>()))
          return family->parse_config(json, source);
  throw ArgumentError(source + ": no model_type (and no known architectures entry) says which " +
                      "model this is; add \"model_type\": one of " +
                      known_list(registry.model_types()));
}

std::shared_ptr<Model> AutoModel::from_config(const ModelConfig& config, ModelTask task) {
  const ModelRegistry& registry = ModelRegistry::global();
  const std::string source = "config of model_type \"" + config.model_type() + "\"";
  const auto& family = registry.family(config.model_type(), source);
  return registry.architecture(family, task, source).create(config);
}

std::shared_ptr<Model> AutoModel::from_pretrained(const std::string& path,
                                                  const ModelConfig& config, ModelTask task,
                                                  bool ignore_mismatched_sizes) {
  const ModelRegistry& registry = ModelRegistry::global();
  const auto& family = registry.family(config.model_type(), path);
  return registry.architecture(family, task, path)
      .from_pretrained(config, path, ignore_mismatched_sizes);
}

std::shared_ptr<Model> AutoModel::from_pretrained(const std::string& path, ModelTask task) {
  const auto config = AutoConfig::from_pretrained(path);
  return from_pretrained(path, *config, task);
}

}  // namespace ctrainer
