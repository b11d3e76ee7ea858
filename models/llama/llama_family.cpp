#include <ctrainer/models/llama/llama_family.h>

#include <ctrainer/models/llama/llama_heads.h>
#include <ctrainer/models/registry/model_registry.h>

namespace ctrainer {

void register_llama_family(ModelRegistry& registry) {
  ModelFamily family;
  family.model_type = "llama";
  family.parse_config = [](const nlohmann::json& json, const std::string& source) {
    return std::make_unique<LlamaModelConfig>(LlamaConfig::from_json(json, source));
  };
  family.architectures.push_back(
      typed_architecture<LlamaForCausalLM, LlamaConfig>("LlamaForCausalLM", ModelTask::kCausalLM));
  family.architectures.push_back(typed_architecture<LlamaForSequenceClassification, LlamaConfig>(
      "LlamaForSequenceClassification", ModelTask::kSequenceClassification));
  registry.add(std::move(family));
}

}  // namespace ctrainer
