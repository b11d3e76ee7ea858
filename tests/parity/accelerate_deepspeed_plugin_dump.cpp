// accelerate's DeepSpeed plugin config as ctrainer builds it from accelerate launch's variables,
// for parity.accelerate_deepspeed_plugin: for each case of CASES.json (a list of
// {"environment": {NAME: value}, "mixed_precision": "no" | "fp16" | "bf16"}) prints one line of
// JSON, {"config": <the plugin's config after its mixed precision>} or {"error": message}.
// Usage: ctrainer_parity_accelerate_deepspeed_plugin_dump CASES.json
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/accelerate/accelerate_deepspeed_plugin.h>

int main(int argc, char** argv) {
  using nlohmann::json;
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " CASES.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  for (const json& c : json::parse(in)) {
    ctrainer::EnvironmentMap environment;
    for (const auto& [name, value] : c.at("environment").items())
      environment[name] = value.get<std::string>();
    json answer;
    try {
      json config = ctrainer::accelerate_deepspeed_plugin_config(environment);
      ctrainer::apply_deepspeed_mixed_precision(config, c.at("mixed_precision").get<std::string>());
      answer = {{"config", config}};
    } catch (const ctrainer::ArgumentError& error) {
      answer = {{"error", error.what()}};
    }
    std::cout << answer.dump() << '\n';
  }
  return 0;
}
