#include <ctrainer/models/gpt2/gpt2_family.h>

#include <ctrainer/models/gpt2/gpt2_heads.h>
#include <ctrainer/models/registry/model_registry.h>

namespace ctrainer {

void register_gpt2_family(ModelRegistry& registry) {
  ModelFamily family;
  family.model_type = "gpt2";
  family.parse_config = [](const nlohmann::json& json, const std::string& source) {
    return std::make_unique<GPT2ModelConfig>(GPT2Config::from_json(json, source));
  };
  family.architectures.push_back(
      typed_architecture<GPT2LMHeadModel, GPT2Config>("GPT2LMHeadModel", ModelTask::kCausalLM));
  family.architectures.push_back(typed_architecture<GPT2ForSequenceClassification, GPT2Config>(
      "GPT2ForSequenceClassification", ModelTask::kSequenceClassification));
  registry.add(std::move(family));
}

}  // namespace ctrainer
