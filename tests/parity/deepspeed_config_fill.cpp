// Fills a DeepSpeed config as ctrainer does, for parity.deepspeed_config: prints one JSON object,
// {"config": <filled config>} or {"error": <message>}.
// Usage: ctrainer_parity_deepspeed_fill CONFIG.json ARGS.json
// ARGS.json: the DeepSpeedTrainerArgs fields plus hidden_size (or null), num_training_steps and
// warmup_steps.
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/deepspeed_config.h>

namespace {

/// The dotted path of a value still "auto" in `config`, or "" (transformers' finalize refuses a
/// config it leaves with "auto" in it; a filled config must not have any).
std::string remaining_auto(const nlohmann::json& config, const std::string& path = "") {
  if (config.is_string() && config.get<std::string>() == "auto") return path;
  if (config.is_object())
    for (const auto& [key, value] : config.items())
      if (auto found = remaining_auto(value, path.empty() ? key : path + "." + key); !found.empty())
        return found;
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using nlohmann::json;
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " CONFIG.json ARGS.json\n";
    return 2;
  }
  std::ifstream in(argv[2]);
  const json a = json::parse(in);
  ctrainer::DeepSpeedTrainerArgs args;
  args.world_size = a.value("world_size", args.world_size);
  args.per_device_train_batch_size =
      a.value("per_device_train_batch_size", args.per_device_train_batch_size);
  args.gradient_accumulation_steps =
      a.value("gradient_accumulation_steps", args.gradient_accumulation_steps);
  args.max_grad_norm = a.value("max_grad_norm", args.max_grad_norm);
  args.learning_rate = a.value("learning_rate", args.learning_rate);
  args.adam_beta1 = a.value("adam_beta1", args.adam_beta1);
  args.adam_beta2 = a.value("adam_beta2", args.adam_beta2);
  args.adam_epsilon = a.value("adam_epsilon", args.adam_epsilon);
  args.weight_decay = a.value("weight_decay", args.weight_decay);
  args.fp16 = a.value("fp16", false);
  args.fp16_full_eval = a.value("fp16_full_eval", false);
  args.bf16 = a.value("bf16", false);
  args.bf16_full_eval = a.value("bf16_full_eval", false);
  std::optional<int64_t> hidden_size;
  if (a.contains("hidden_size") && !a["hidden_size"].is_null())
    hidden_size = a["hidden_size"].get<int64_t>();
  json out;
  try {
    ctrainer::DeepSpeedConfig ds = ctrainer::DeepSpeedConfig::from_file(argv[1]);
    ds.trainer_config_process(args);
    ds.trainer_config_finalize(hidden_size, a.at("num_training_steps").get<int64_t>(),
                               a.at("warmup_steps").get<int64_t>());
    out["config"] = ds.config();
    if (const std::string key = remaining_auto(ds.config()); !key.empty()) {
      std::cerr << "deepspeed_config_fill: " << key << " is still \"auto\" after filling\n";
      return 3;
    }
    // DeepSpeed's batch identity, which the filled values must satisfy.
    const json& c = ds.config();
    if (c.contains("train_batch_size") && c.contains("train_micro_batch_size_per_gpu") &&
        c.contains("gradient_accumulation_steps") &&
        c["train_batch_size"].get<int64_t>() !=
            c["train_micro_batch_size_per_gpu"].get<int64_t>() *
                c["gradient_accumulation_steps"].get<int64_t>() * args.world_size) {
      std::cerr << "deepspeed_config_fill: train_batch_size != micro x accumulation x world\n";
      return 3;
    }
  } catch (const ctrainer::ArgumentError& e) {
    out["error"] = e.what();
  }
  std::cout << out.dump() << "\n";
  return 0;
}
