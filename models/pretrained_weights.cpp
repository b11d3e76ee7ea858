#include <ctrainer/models/pretrained_weights.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/core/logging.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/integrations/safetensors_index.h>
#include <ctrainer/models/lora/lora_model.h>

namespace ctrainer {
namespace fs = std::filesystem;
namespace {

constexpr const char* kWeightsFile = "model.safetensors";
constexpr const char* kConfigFile = "config.json";

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string key_list(const std::vector<std::string>& keys) {
  std::vector<std::string> quoted;
  for (const auto& k : keys) quoted.push_back("'" + k + "'");
  return fmt::format("[{}]", fmt::join(quoted, ", "));
}

// HF _fix_state_dict_key_on_load: TF-era checkpoints name LayerNorm parameters gamma / beta.
std::string fix_legacy_name(std::string key) {
  auto replace_suffix = [&](const std::string& from, const std::string& to) {
    if (key.size() >= from.size() && key.compare(key.size() - from.size(), from.size(), from) == 0)
      key = key.substr(0, key.size() - from.size()) + to;
  };
  if (key.find("LayerNorm.") != std::string::npos) {
    replace_suffix(".gamma", ".weight");
    replace_suffix(".beta", ".bias");
  }
  return key;
}

}  // namespace

WeightLoadReport load_state_dict(torch::nn::Module& module,
                                 const std::map<std::string, at::Tensor>& checkpoint,
                                 const WeightLoadOptions& options, const std::string& source) {
  std::map<std::string, at::Tensor> targets;
  for (const auto& item : module.named_parameters(true)) targets[item.key()] = item.value();
  for (const auto& item : module.named_buffers(true)) targets[item.key()] = item.value();

  // HF _load_pretrained_model's prefix rules, decided on the whole key sets.
  const std::string prefix =
      options.base_model_prefix.empty() ? "" : options.base_model_prefix + ".";
  bool checkpoint_has_prefix = false, model_has_prefix = false;
  if (!prefix.empty()) {
    for (const auto& [k, v] : checkpoint) checkpoint_has_prefix |= starts_with(k, prefix);
    for (const auto& [k, v] : targets) model_has_prefix |= starts_with(k, prefix);
  }
  const bool add_prefix = !checkpoint_has_prefix && model_has_prefix;    // base -> head model
  const bool strip_prefix = checkpoint_has_prefix && !model_has_prefix;  // head -> base model

  std::vector<std::regex> ignored;
  for (const auto& pattern : options.ignore_unexpected) ignored.emplace_back(pattern);

  WeightLoadReport report;
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // (target, value)
  std::set<std::string> loaded;
  for (const auto& [checkpoint_key, value] : checkpoint) {
    std::string key = fix_legacy_name(checkpoint_key);
    if (add_prefix) key = prefix + key;
    if (strip_prefix) {
      // A head's own weights (classifier.*) have no place in the base model.
      key = starts_with(key, prefix) ? key.substr(prefix.size()) : "\x01" + key;
    }
    auto it = targets.find(key);
    if (it == targets.end()) {
      // (checkpoint_key captured by name: clang before 16 cannot capture a structured binding.)
      const bool silent = std::any_of(
          ignored.begin(), ignored.end(),
          [&name = checkpoint_key](const std::regex& r) { return std::regex_search(name, r); });
      if (!silent) report.unexpected_keys.push_back(checkpoint_key);
      continue;
    }
    if (it->second.sizes() != value.sizes()) {
      report.mismatched_keys.push_back({key, value.sizes().vec(), it->second.sizes().vec()});
      continue;
    }
    copies.emplace_back(it->second, value);
    loaded.insert(key);
  }
  std::set<std::string> mismatched;
  for (const auto& m : report.mismatched_keys) mismatched.insert(m.key);
  for (const auto& [key, tensor] : targets)
    if (loaded.count(key) == 0 && mismatched.count(key) == 0) report.missing_keys.push_back(key);
  std::sort(report.unexpected_keys.begin(), report.unexpected_keys.end());
  if (options.strict && (!report.missing_keys.empty() || !report.unexpected_keys.empty()))
    throw ArgumentError(source + " does not match the model " + options.model_class + ": missing " +
                        key_list(report.missing_keys) + ", unexpected " +
                        key_list(report.unexpected_keys) +
                        "; it must hold exactly the model's parameters and buffers");
  if (!report.mismatched_keys.empty() && !options.ignore_mismatched_sizes) {
    std::string message =
        "Error(s) in loading the weights of " + options.model_class + " from " + source + ":";
    for (const auto& m : report.mismatched_keys)
      message += "\n\tsize mismatch for " + m.key + ": copying a param with shape " +
                 shape_text(m.checkpoint_shape) +
                 " from checkpoint, the shape in current model is " + shape_text(m.model_shape) +
                 ".";
    message +=
        "\n\tUse a config that matches the checkpoint, or ignore_mismatched_sizes to "
        "re-initialize these weights.";
    throw ArgumentError(message);
  }
  {
    torch::NoGradGuard no_grad;
    for (auto& [target, value] : copies) target.copy_(value);
  }
  return report;
}

std::vector<std::string> weight_load_warnings(const WeightLoadReport& report,
                                              const WeightLoadOptions& options,
                                              const std::string& source) {
  std::vector<std::string> out;
  const std::string& cls = options.model_class;
  if (!report.unexpected_keys.empty()) {
    out.push_back(
        "Some weights of the model checkpoint at " + source + " were not used when initializing " +
        cls + ": " + key_list(report.unexpected_keys) +
        "\n- This IS expected if you are initializing " + cls +
        " from the checkpoint of a model trained on another task or with another architecture "
        "(e.g. initializing a BertForSequenceClassification model from a BertForPreTraining "
        "model).\n- This IS NOT expected if you are initializing " +
        cls + " from the checkpoint of a model that you expect to be exactly identical.");
  }
  if (!report.missing_keys.empty()) {
    out.push_back("Some weights of " + cls + " were not initialized from the model checkpoint at " +
                  source + " and are newly initialized: " + key_list(report.missing_keys) +
                  "\nYou should probably TRAIN this model on a down-stream task to be able to use "
                  "it for predictions and inference.");
  }
  if (!report.mismatched_keys.empty()) {
    std::string lines;
    for (const auto& m : report.mismatched_keys)
      lines += "\n- " + m.key + ": found shape " + shape_text(m.checkpoint_shape) +
               " in the checkpoint and " + shape_text(m.model_shape) + " in the model instantiated";
    out.push_back("Some weights of " + cls + " were not initialized from the model checkpoint at " +
                  source + " and are newly initialized because the shapes did not match:" + lines +
                  "\nYou should probably TRAIN this model on a down-stream task to be able to use "
                  "it for predictions and inference.");
  }
  return out;
}

bool checkpoint_names_key(const std::string& path, const std::string& key) {
  try {
    fs::path file = path;
    if (fs::is_directory(file)) {
      file = fs::path(path) / kWeightsFile;
      if (!fs::exists(file)) file = fs::path(path) / kSafetensorsIndexFile;
    }
    if (file.filename() == kSafetensorsIndexFile) {
      std::ifstream in(file);
      return nlohmann::json::parse(in).at("weight_map").contains(key);
    }
    for (const auto& info : read_safetensors_header(file.string()).tensors)
      if (info.name == key) return true;
  } catch (const std::exception&) {
  }
  return false;
}

WeightLoadReport load_pretrained_weights(torch::nn::Module& module, const std::string& path,
                                         const WeightLoadOptions& options) {
  // As transformers: a folder's model.safetensors first, then a sharded checkpoint's index.
  fs::path file = path;
  if (fs::is_directory(file)) {
    file /= kWeightsFile;
    if (!fs::exists(file) && fs::exists(fs::path(path) / kSafetensorsIndexFile))
      file = fs::path(path) / kSafetensorsIndexFile;
    if (!fs::exists(file) && fs::exists(fs::path(path) / kLoraAdapterWeightsFile)) {
      // A PEFT adapter folder (a LoRA run's output or checkpoint): its adapters only.
      if (!attached_lora_config(module))
        throw ArgumentError("model folder " + path + " is a PEFT adapter (" +
                            kLoraAdapterWeightsFile +
                            ", no model weights); give its base model as the model and the "
                            "adapter folder as --lora_config");
      load_lora_adapter(module, path);
      return {};
    }
    if (!fs::exists(file)) {
      for (const char* other : {"pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5"})
        if (fs::exists(fs::path(path) / other))
          throw ArgumentError("model folder " + path + " has " + other + " but no " + kWeightsFile +
                              " or " + kSafetensorsIndexFile +
                              "; only safetensors weights can be read: convert it in Python "
                              "with model.save_pretrained(dir, safe_serialization=True)");
      throw ArgumentError("model folder " + path + " has no " + kWeightsFile + " and no " +
                          kSafetensorsIndexFile);
    }
  } else if (!fs::exists(file)) {
    throw ArgumentError("model weights " + path + " do not exist");
  }
  std::map<std::string, at::Tensor> tensors;
  try {
    if (file.filename() == kSafetensorsIndexFile)
      tensors = load_safetensors_shards(file);
    else
      tensors = load_safetensors(file.string()).tensors;
  } catch (const SafetensorsError& e) {
    throw ArgumentError(e.what());
  }
  const std::string source = fs::path(path).string();
  WeightLoadReport report = load_state_dict(module, tensors, options, source);
  for (const auto& message : weight_load_warnings(report, options, source))
    logging::logger()->warn("{}", message);
  if (report.missing_keys.empty() && report.unexpected_keys.empty() &&
      report.mismatched_keys.empty())
    logging::logger()->info(
        "All the weights of {} were initialized from the model checkpoint at {}.",
        options.model_class, source);
  return report;
}

void save_pretrained(const Model& model, const std::string& dir, const std::string& architecture,
                     std::int64_t max_shard_bytes) {
  if (attached_lora_config(model)) {  // PeftModel.save_pretrained: the adapter only
    save_lora_adapter(model, dir);
    return;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create model folder " + dir + ": " + ec.message());
  std::int64_t parameters = 0;
  for (const at::Tensor& parameter : model.parameters()) parameters += parameter.numel();
  save_safetensors_shards(dir, ordered_state_dict(model), max_shard_bytes, parameters);
  if (auto config = model.config()) {
    if (!architecture.empty()) (*config)["architectures"] = nlohmann::json::array({architecture});
    write_json_file(fs::path(dir) / kConfigFile, *config);
  }
}

PretrainedLoad build_and_load_pretrained(const std::function<std::shared_ptr<Model>()>& build,
                                         const std::string& path, const WeightLoadOptions& load) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  at::Tensor before;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    before = generator.get_state();
  }
  PretrainedLoad out;
  out.model = build();
  const WeightLoadReport report = load_pretrained_weights(*out.model, path, load);
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(before);
  }
  out.fresh_keys = report.missing_keys;
  for (const MismatchedKey& key : report.mismatched_keys) out.fresh_keys.push_back(key.key);
  return out;
}

}  // namespace ctrainer
