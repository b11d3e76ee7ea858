#include <ctrainer/models/lora/lora_model.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/modules/linear.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/core/logging.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/integrations/safetensors_index.h>
#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/lora/lora_adapter.h>
#include <ctrainer/models/tokenizers/pipeline/patterns.h>

namespace ctrainer {
namespace {

namespace fs = std::filesystem;

bool ends_with_component(const std::string& path, const std::string& name) {
  return path == name || (path.size() > name.size() && path.ends_with("." + name));
}

// PEFT's modules_to_save guard: `name` appears in the path as whole dotted components.
bool within_saved_module(const std::string& path, const std::string& name) {
  const std::string dotted = "." + path + ".";
  return dotted.find("." + name + ".") != std::string::npos;
}

bool full_match(const tokenizers::Regex& regex, const std::string& text) {
  for (const auto& [begin, end] : regex.find_all(text))
    if (begin == 0 && end == text.size()) return true;
  return false;
}

std::string model_type_of(const Model& model) {
  const auto config = model.config();
  if (config && config->contains("model_type") && (*config)["model_type"].is_string())
    return (*config)["model_type"].get<std::string>();
  return "";
}

// PEFT's all-linear exclusions: the output layer of a language-model head (its
// get_output_embeddings), else for SEQ_CLS the classifier head.
std::set<std::string> all_linear_exclusions(const torch::nn::Module& model,
                                            const std::string& task_type) {
  std::set<std::string> present;
  for (const auto& item : model.named_children()) present.insert(item.key());
  for (const auto& item : model.named_modules("", /*include_self=*/false))
    if (item.key() == "cls.predictions.decoder") return {item.key()};
  if (present.count("lm_head")) return {"lm_head"};
  if (task_type == "SEQ_CLS")
    for (const char* head : {"score", "classifier"})
      if (present.count(head)) return {head};
  return {};
}

// Each attached adapter with its module path, in module order.
std::vector<std::pair<std::string, AdaptableProjection*>> adapted_projections(
    const torch::nn::Module& model) {
  std::vector<std::pair<std::string, AdaptableProjection*>> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    auto* projection = dynamic_cast<AdaptableProjection*>(item.value().get());
    if (projection && dynamic_cast<LoraAdapter*>(projection->adapter().get()))
      out.emplace_back(item.key(), projection);
  }
  return out;
}

// Module paths whose parameters train and save in full (PEFT: the path ends with a name).
std::vector<std::string> saved_module_paths(const torch::nn::Module& model,
                                            const LoraConfig& config) {
  std::vector<std::string> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false))
    for (const std::string& name : config.modules_to_save)
      if (item.key().ends_with(name)) {
        out.push_back(item.key());
        break;
      }
  return out;
}

bool under_any(const std::string& key, const std::vector<std::string>& module_paths) {
  for (const std::string& path : module_paths)
    if (key.starts_with(path + ".")) return true;
  return false;
}

bool is_lora_key(const std::string& key) {
  return key.ends_with(".lora_A.weight") || key.ends_with(".lora_B.weight");
}

}  // namespace

LoraAttachment attach_lora(Model& model, LoraConfig config) {
  if (attached_lora_config(model))
    throw ArgumentError("the model has LoRA adapters already; attach them once");
  config.validate("LoRA config");
  const std::string model_type = model_type_of(model);
  if (!config.all_linear && !config.target_regex && config.target_modules.empty()) {
    config.target_modules = default_lora_target_modules(model_type);
    if (config.target_modules.empty())
      throw ArgumentError(
          "LoRA: no target modules given and PEFT has no default for model_type \"" + model_type +
          "\"; name them (--lora_target_modules or target_modules)");
  }
  if (config.task_type == "SEQ_CLS")
    for (const char* head : {"classifier", "score"})
      if (std::find(config.modules_to_save.begin(), config.modules_to_save.end(), head) ==
          config.modules_to_save.end())
        config.modules_to_save.push_back(head);

  std::unique_ptr<tokenizers::Regex> regex;
  if (config.target_regex) regex = std::make_unique<tokenizers::Regex>(*config.target_regex);
  const std::set<std::string> excluded_outputs =
      config.all_linear ? all_linear_exclusions(model, config.task_type) : std::set<std::string>{};

  // Which modules get an adapter, decided before any is attached (lora_A/lora_B are Linears too).
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> targets;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const std::string& path = item.key();
    bool excluded = false;
    for (const std::string& name : config.exclude_modules)
      excluded |= ends_with_component(path, name);
    for (const std::string& name : config.modules_to_save)
      excluded |= within_saved_module(path, name);
    if (excluded) continue;
    bool matched;
    if (config.all_linear)
      matched =
          dynamic_cast<AdaptableProjection*>(item.value().get()) && !excluded_outputs.count(path);
    else if (regex)
      matched = full_match(*regex, path);
    else {
      matched = false;
      for (const std::string& name : config.target_modules)
        matched |= ends_with_component(path, name);
    }
    if (!matched) continue;
    if (!dynamic_cast<AdaptableProjection*>(item.value().get()))
      throw ArgumentError("LoRA: target module " + path +
                          " is not a Linear (or GPT-2 Conv1D); LoRA adapts only those. Narrow "
                          "the target modules to the projections");
    targets.emplace_back(path, item.value());
  }
  if (targets.empty())
    throw ArgumentError(
        "LoRA: target modules " +
        (config.all_linear ? std::string("all-linear")
         : regex           ? *config.target_regex
                           : fmt::format("{}", config.target_modules)) +
        " not found in the base model; check the names against the model's modules (e.g. "
        "q_proj, query, c_attn)");

  LoraAttachment out;
  bool any_transposed = false;
  for (const auto& [path, module] : targets) {
    out.adapted_modules.push_back(path);
    any_transposed |= dynamic_cast<AdaptableProjection*>(module.get())->fan_in_fan_out();
  }
  if (config.all_linear) {  // PEFT saves the resolved names
    config.all_linear = false;
    config.target_modules = out.adapted_modules;
  }
  config.fan_in_fan_out = any_transposed;
  auto shared = std::make_shared<const LoraConfig>(config);

  for (at::Tensor& parameter : model.parameters()) parameter.set_requires_grad(false);
  for (const auto& [path, module] : targets) {
    auto* projection = dynamic_cast<AdaptableProjection*>(module.get());
    projection->set_adapter(std::make_shared<LoraAdapter>(*module, *projection, shared));
  }
  out.saved_modules = saved_module_paths(model, config);
  for (const auto& item : model.named_parameters()) {
    if (is_lora_key(item.key()) || under_any(item.key(), out.saved_modules))
      item.value().set_requires_grad(true);
  }
  for (const at::Tensor& parameter : model.parameters()) {
    out.all_parameters += parameter.numel();
    if (parameter.requires_grad()) out.trainable_parameters += parameter.numel();
  }
  logging::logger()->info(
      "LoRA r={} alpha={} on {} modules: trainable params: {} || all params: {} || "
      "trainable%: {:.4f}",
      config.r, config.lora_alpha, out.adapted_modules.size(), out.trainable_parameters,
      out.all_parameters,
      100.0 * static_cast<double>(out.trainable_parameters) /
          static_cast<double>(out.all_parameters));
  return out;
}

std::shared_ptr<const LoraConfig> attached_lora_config(const torch::nn::Module& model) {
  for (const auto& [path, projection] : adapted_projections(model))
    return static_cast<LoraAdapter&>(*projection->adapter()).shared_config();
  return nullptr;
}

std::vector<std::pair<std::string, at::Tensor>> lora_adapter_state_dict(
    const torch::nn::Module& model) {
  const auto config = attached_lora_config(model);
  if (!config) throw std::logic_error("lora_adapter_state_dict: the model has no LoRA adapters");
  const std::vector<std::string> saved = saved_module_paths(model, *config);
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (auto& [key, tensor] : ordered_state_dict(model))
    if (is_lora_key(key) || under_any(key, saved)) out.emplace_back(kLoraKeyPrefix + key, tensor);
  return out;
}

void save_lora_adapter(const torch::nn::Module& model, const std::string& dir) {
  const auto config = attached_lora_config(model);
  if (!config) throw std::logic_error("save_lora_adapter: the model has no LoRA adapters");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create adapter folder " + dir + ": " + ec.message());
  std::map<std::string, at::Tensor> tensors;
  for (auto& [key, tensor] : lora_adapter_state_dict(model)) tensors.emplace(key, tensor);
  const fs::path file = fs::path(dir) / kLoraAdapterWeightsFile;
  const fs::path partial = file.string() + ".partial";
  save_safetensors(partial.string(), tensors, {{"format", "pt"}});
  fs::rename(partial, file);
  write_json_file(fs::path(dir) / kLoraAdapterConfigFile, config->to_json());
}

namespace {

std::map<std::string, at::Tensor> read_adapter_file(const fs::path& file) {
  try {
    return load_safetensors(file.string()).tensors;
  } catch (const SafetensorsError& e) {
    throw ArgumentError(e.what());
  }
}

// The adapter file's tensors checked against the model's adapters: the same keys and shapes.
void check_adapter_file(const std::map<std::string, at::Tensor>& tensors,
                        const std::vector<std::pair<std::string, at::Tensor>>& expected,
                        const fs::path& file) {
  std::set<std::string> expected_keys;
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [key, tensor] : expected) {
    expected_keys.insert(key);
    auto it = tensors.find(key);
    if (it == tensors.end())
      missing.push_back(key);
    else if (it->second.sizes() != tensor.sizes())
      mismatched.push_back(
          fmt::format("{} (file {}, model {})", key, it->second.sizes(), tensor.sizes()));
  }
  for (const auto& item : tensors)
    if (!expected_keys.count(item.first)) unexpected.push_back(item.first);
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty())
    throw ArgumentError(fmt::format(
        "the PEFT adapter {} does not fit the model's adapters (its adapter_config.json must be "
        "the one they were attached with); missing: {}; unexpected: {}; size mismatch: {}",
        file.string(), missing, unexpected, mismatched));
}

fs::path adapter_file(const std::string& path) {
  fs::path file = path;
  if (fs::is_directory(file)) file /= kLoraAdapterWeightsFile;
  return file;
}

}  // namespace

void load_lora_adapter(torch::nn::Module& model, const std::string& path) {
  if (!attached_lora_config(model))
    throw ArgumentError("the PEFT adapter " + path +
                        " needs a model with LoRA adapters attached (give its adapter_config.json "
                        "as --lora_config)");
  const fs::path file = adapter_file(path);
  const std::map<std::string, at::Tensor> tensors = read_adapter_file(file);
  auto expected = lora_adapter_state_dict(model);
  check_adapter_file(tensors, expected, file);
  torch::NoGradGuard no_grad;
  for (auto& [key, tensor] : expected) tensor.copy_(tensors.at(key));
}

void merge_lora(torch::nn::Module& model) {
  const auto projections = adapted_projections(model);
  if (projections.empty()) throw std::logic_error("merge_lora: the model has no LoRA adapters");
  torch::NoGradGuard no_grad;
  for (const auto& [path, projection] : projections) {
    auto& adapter = static_cast<LoraAdapter&>(*projection->adapter());
    at::Tensor& weight = projection->projection_weight();
    weight.add_(adapter.delta_weight(projection->fan_in_fan_out()).to(weight.dtype()));
    projection->set_adapter(nullptr);
    auto* module = dynamic_cast<torch::nn::Module*>(projection);
    module->unregister_module("lora_A");
    module->unregister_module("lora_B");
    module->unregister_module("lora_dropout");
  }
}

void save_merged_lora_model(const Model& model, const std::string& adapter_dir,
                            const std::string& out_dir, std::int64_t max_shard_bytes) {
  const auto config = attached_lora_config(model);
  if (!config) throw std::logic_error("save_merged_lora_model: the model has no LoRA adapters");
  const fs::path file = adapter_file(adapter_dir);
  const std::map<std::string, at::Tensor> adapter = read_adapter_file(file);
  check_adapter_file(adapter, lora_adapter_state_dict(model), file);
  std::map<std::string, bool> transposed_weight;  // "<module>.weight" -> fan_in_fan_out
  for (const auto& [path, projection] : adapted_projections(model))
    transposed_weight[path + ".weight"] = projection->fan_in_fan_out();
  const std::vector<std::string> saved = saved_module_paths(model, *config);
  const double scaling = config->scaling();

  torch::NoGradGuard no_grad;
  std::vector<std::pair<std::string, at::Tensor>> merged;
  std::int64_t parameters = 0;
  for (auto& [key, tensor] : ordered_state_dict(model)) {
    if (is_lora_key(key)) continue;
    at::Tensor value = tensor;
    if (under_any(key, saved)) {
      value = adapter.at(kLoraKeyPrefix + key);
    } else if (auto it = transposed_weight.find(key); it != transposed_weight.end()) {
      const std::string module = key.substr(0, key.size() - std::string(".weight").size());
      const at::Tensor& a = adapter.at(kLoraKeyPrefix + module + ".lora_A.weight");
      const at::Tensor& b = adapter.at(kLoraKeyPrefix + module + ".lora_B.weight");
      at::Tensor delta = at::matmul(b.to(at::kFloat), a.to(at::kFloat)) * scaling;
      if (it->second) delta = delta.t();
      value = (tensor.to(at::kCPU, at::kFloat) + delta).to(tensor.scalar_type());
    }
    merged.emplace_back(key, value);
  }
  for (const auto& item : model.named_parameters())
    if (!is_lora_key(item.key())) parameters += item.value().numel();
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw std::runtime_error("cannot create model folder " + out_dir + ": " + ec.message());
  save_safetensors_shards(out_dir, merged, max_shard_bytes, parameters);
  if (auto model_config = model.config())
    write_json_file(fs::path(out_dir) / "config.json", *model_config);
}

}  // namespace ctrainer
