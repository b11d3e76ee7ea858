#include <ctrainer/models/t5/t5_family.h>

#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/t5/t5_heads.h>

namespace ctrainer {

void register_t5_family(ModelRegistry& registry) {
  ModelFamily family;
  family.model_type = "t5";
  family.parse_config = [](const nlohmann::json& json, const std::string& source) {
    return std::make_unique<T5ModelConfig>(T5Config::from_json(json, source));
  };
  ModelArchitecture conditional_generation;
  conditional_generation.name = "T5ForConditionalGeneration";
  conditional_generation.task = ModelTask::kSeq2SeqLM;
  conditional_generation.create = [](const ModelConfig& config) -> std::shared_ptr<Model> {
    return T5ForConditionalGeneration::from_config(typed_config_of<T5Config>(config));
  };
  conditional_generation.from_pretrained =
      [](const ModelConfig& config, const std::string& path,
         bool ignore_mismatched_sizes) -> std::shared_ptr<Model> {
    return T5ForConditionalGeneration::from_pretrained(typed_config_of<T5Config>(config), path,
                                                       ignore_mismatched_sizes);
  };
  family.architectures.push_back(std::move(conditional_generation));
  registry.add(std::move(family));
}

}  // namespace ctrainer
