#include <ctrainer/models/bert/bert_family.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/bert/bert_for_masked_lm.h>
#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/models/registry/model_registry.h>

namespace ctrainer {

void register_bert_family(ModelRegistry& registry) {
  ModelFamily family;
  family.model_type = "bert";
  family.parse_config = [](const nlohmann::json& json, const std::string& source) {
    return std::make_unique<BertModelConfig>(BertConfig::from_json(json, source));
  };
  ModelArchitecture classifier;
  classifier.name = "BertForSequenceClassification";
  classifier.task = ModelTask::kSequenceClassification;
  classifier.create = [](const ModelConfig& config) -> std::shared_ptr<Model> {
    return std::make_shared<BertForSequenceClassification>(bert_config_of(config));
  };
  classifier.from_pretrained = [](const ModelConfig& config, const std::string& path,
                                  bool ignore_mismatched_sizes) -> std::shared_ptr<Model> {
    WeightLoadOptions load = BertForSequenceClassification::weight_load_options();
    load.ignore_mismatched_sizes = ignore_mismatched_sizes;
    return BertForSequenceClassification::with_pretrained_weights(bert_config_of(config), path,
                                                                  load);
  };
  family.architectures.push_back(std::move(classifier));
  ModelArchitecture masked_lm;
  masked_lm.name = "BertForMaskedLM";
  masked_lm.task = ModelTask::kMaskedLM;
  masked_lm.create = [](const ModelConfig& config) -> std::shared_ptr<Model> {
    return std::make_shared<BertForMaskedLM>(bert_config_of(config));
  };
  masked_lm.from_pretrained = [](const ModelConfig& config, const std::string& path,
                                 bool ignore_mismatched_sizes) -> std::shared_ptr<Model> {
    return BertForMaskedLM::from_pretrained(bert_config_of(config), path, ignore_mismatched_sizes);
  };
  family.architectures.push_back(std::move(masked_lm));
  registry.add(std::move(family));
}

}  // namespace ctrainer
