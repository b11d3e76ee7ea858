#include <ctrainer/models/bart/bart_family.h>

#include <ctrainer/models/bart/bart_heads.h>
#include <ctrainer/models/registry/model_registry.h>

namespace ctrainer {

void register_bart_family(ModelRegistry& registry) {
  ModelFamily family;
  family.model_type = "bart";
  family.parse_config = [](const nlohmann::json& json, const std::string& source) {
    return std::make_unique<BartModelConfig>(BartConfig::from_json(json, source));
  };
  family.architectures.push_back(typed_architecture<BartForConditionalGeneration, BartConfig>(
      "BartForConditionalGeneration", ModelTask::kSeq2SeqLM));
  registry.add(std::move(family));
}

}  // namespace ctrainer
