#include <ctrainer/integrations/sagemaker/sagemaker_parallelism.h>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

using nlohmann::json;

constexpr const char* kFrameworkParams = "SM_FRAMEWORK_PARAMS";
constexpr const char* kModelParallelParams = "SM_HP_MP_PARAMETERS";

/// `json.loads(os.getenv(name, "{}"))`; std::nullopt where Python raises JSONDecodeError.
std::optional<json> parsed(const SageMakerVariableLookup& lookup, const std::string& name) {
  const std::string text = lookup(name).value_or("{}");
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

/// Python's truth value of a decoded JSON value.
bool truthy(const json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0.0;
  if (value.is_string()) return !value.get_ref<const std::string&>().empty();
  return !value.empty();  // list or dict
}

/// `params.get(key, False)` made truthy; Python raises AttributeError unless params is a dict.
bool enabled_in_framework_params(const json& params, const std::string& key) {
  if (!params.is_object())
    throw ArgumentError(std::string(kFrameworkParams) + "=" + params.dump() +
                        " is not a JSON object; SageMaker writes the estimator's distribution "
                        "settings there ({\"" +
                        key +
                        "\": true}) (transformers fails on it with AttributeError); fix or unset "
                        "it");
  const auto it = params.find(key);
  return it != params.end() && truthy(*it);
}

/// `"partitions" in options`: a dict's key, a list's element, a string's substring; Python
/// raises TypeError for a number, a boolean or null.
bool holds_partitions(const json& options) {
  if (options.is_object()) return options.contains("partitions");
  if (options.is_array()) {
    for (const auto& element : options)
      if (element.is_string() && element.get_ref<const std::string&>() == "partitions") return true;
    return false;
  }
  if (options.is_string())
    return options.get_ref<const std::string&>().find("partitions") != std::string::npos;
  throw ArgumentError(std::string(kModelParallelParams) + "=" + options.dump() +
                      " is neither a JSON object nor a list: SageMaker writes the estimator's "
                      "mp_parameters there as an object ({\"partitions\": 2, ...}) "
                      "(transformers fails on it with TypeError); fix or unset it");
}

}  // namespace

SageMakerParallelism read_sagemaker_parallelism(const SageMakerVariableLookup& lookup) {
  SageMakerParallelism result;
  const std::optional<json> framework = parsed(lookup, kFrameworkParams);
  if (framework)
    result.data_parallel =
        enabled_in_framework_params(*framework, "sagemaker_distributed_dataparallel_enabled");
  const std::optional<json> model_parallel = parsed(lookup, kModelParallelParams);
  if (model_parallel && holds_partitions(*model_parallel) && framework)
    result.model_parallel = enabled_in_framework_params(*framework, "sagemaker_mpi_enabled");
  return result;
}

void refuse_sagemaker_model_parallelism(const SageMakerVariableLookup& lookup) {
  if (!read_sagemaker_parallelism(lookup).model_parallel) return;
  throw ArgumentError(
      std::string(kModelParallelParams) + "='" + lookup(kModelParallelParams).value_or("") +
      "' with \"sagemaker_mpi_enabled\" in " + kFrameworkParams +
      " asks for SageMaker model parallelism (smdistributed.modelparallel, transformers' "
      "is_sagemaker_mp_enabled), which ctrainer does not implement; remove mp_parameters and the "
      "smdistributed modelparallel distribution from the estimator and shard with --deepspeed or "
      "--fsdp instead");
}

}  // namespace ctrainer
