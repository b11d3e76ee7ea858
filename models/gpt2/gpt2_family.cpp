#include <ctrainer/models/gpt2/gpt2_family.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/gpt2/gpt2_heads.h>
#include <ctrainer/models/registry/model_registry.h>

namespace ctrainer {
namespace {

template <typename Head>
ModelArchitecture architecture(const std::string& name, ModelTask task) {
  ModelArchitecture a;
  a.name = name;
  a.task = task;
  a.create = [](const ModelConfig& config) -> std::shared_ptr<Model> {
    return std::make_shared<Head>(gpt2_config_of(config));
  };
  a.from_pretrained = [](const ModelConfig& config, const std::string& path,
                         bool ignore_mismatched_sizes) -> std::shared_ptr<Model> {
    return Head::from_pretrained(gpt2_config_of(config), path, ignore_mismatched_sizes);
  };
  return a;
}

}  // namespace

void register_gpt2_family(ModelRegistry& registry) {
  ModelFamily family;
  family.model_type = "gpt2";
  family.parse_config = [](const nlohmann::json& json, const std::string& source) {
    return std::make_unique<GPT2ModelConfig>(GPT2Config::from_json(json, source));
  };
  family.architectures.push_back(
      architecture<GPT2LMHeadModel>("GPT2LMHeadModel", ModelTask::kCausalLM));
  family.architectures.push_back(architecture<GPT2ForSequenceClassification>(
      "GPT2ForSequenceClassification", ModelTask::kSequenceClassification));
  registry.add(std::move(family));
}

}  // namespace ctrainer
