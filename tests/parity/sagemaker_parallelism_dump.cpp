// SageMaker's parallelism switches read as ctrainer reads them, for parity.sagemaker_parallelism:
// for each case of CASES.json (a list of {"SM_FRAMEWORK_PARAMS": text or null,
// "SM_HP_MP_PARAMETERS": text or null}; null: unset) prints one line of JSON,
// {"data_parallel": bool, "model_parallel": bool} or {"error": message}.
// Usage: ctrainer_parity_sagemaker_parallelism_dump CASES.json
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/sagemaker/sagemaker_parallelism.h>

int main(int argc, char** argv) {
  using nlohmann::json;
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " CASES.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  const json cases = json::parse(in);
  for (const json& variables : cases) {
    // As the programs look variables up: an empty value is an unset one.
    const auto lookup = [&](const std::string& name) -> std::optional<std::string> {
      if (!variables.contains(name) || variables[name].is_null()) return std::nullopt;
      const auto& value = variables[name].get_ref<const std::string&>();
      if (value.empty()) return std::nullopt;
      return value;
    };
    json answer;
    try {
      const ctrainer::SageMakerParallelism found = ctrainer::read_sagemaker_parallelism(lookup);
      answer = {{"data_parallel", found.data_parallel}, {"model_parallel", found.model_parallel}};
    } catch (const ctrainer::ArgumentError& error) {
      answer = {{"error", error.what()}};
    }
    std::cout << answer.dump() << '\n';
  }
  return 0;
}
