#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>
#include <ctrainer/integrations/sagemaker/sagemaker_parallelism.h>

extern char** environ;  // POSIX: the process's environment, NAME=value

namespace ctrainer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kHyperparameterPrefix = "SM_HP_";
constexpr const char* kChannelPrefix = "SM_CHANNEL_";

std::optional<std::string> lookup(const EnvironmentMap& environment, const std::string& name) {
  const auto it = environment.find(name);
  if (it == environment.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

/// A typed JSON value as command-line tokens (SM_HPS values).
std::vector<std::string> tokens_of(const json& value, const std::string& source) {
  if (value.is_string()) return {value.get<std::string>()};
  if (value.is_boolean()) return {value.get<bool>() ? "true" : "false"};
  if (value.is_number()) return {value.dump()};
  if (value.is_null()) return {"None"};
  if (value.is_array()) {
    std::vector<std::string> tokens;
    for (const auto& element : value) {
      if (element.is_array() || element.is_object())
        throw ArgumentError(source + " holds a nested JSON list or object (" + value.dump() +
                            "); flags take strings, numbers, booleans or a flat list");
      auto inner = tokens_of(element, source);
      tokens.insert(tokens.end(), inner.begin(), inner.end());
    }
    return tokens;
  }
  throw ArgumentError(source + " holds a JSON object (" + value.dump() +
                      "); flags take strings, numbers, booleans or a list: pass a file's path "
                      "for a JSON configuration (--deepspeed ds.json)");
}

/// SM_HP_<NAME> values are text: JSON lists ('["tensorboard","mlflow"]') are split, anything
/// else is one token.
std::vector<std::string> tokens_of_text(const std::string& text, const std::string& source) {
  if (!text.empty() && text.front() == '[') {
    const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_array()) return tokens_of(parsed, source);
  }
  return {text};
}

bool reserved(const std::string& key) {
  return key.rfind("sagemaker_", 0) == 0 || key == "mp_parameters";
}

}  // namespace

EnvironmentMap process_environment() {
  EnvironmentMap environment;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const size_t eq = text.find('=');
    if (eq != std::string::npos) environment.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return environment;
}

std::vector<EnvironmentFlagValue> sagemaker_flag_values(const EnvironmentMap& environment) {
  std::vector<EnvironmentFlagValue> values;
  if (const auto checkpoints = sagemaker_checkpoint_dir(environment))
    values.push_back({"output_dir", {*checkpoints}, "SageMaker's checkpoint folder"});
  else if (const auto model_dir = lookup(environment, "SM_MODEL_DIR"))
    values.push_back({"output_dir", {*model_dir}, "SM_MODEL_DIR"});
  refuse_sagemaker_model_parallelism(
      [&](const std::string& name) { return lookup(environment, name); });

  if (const auto raw = lookup(environment, "SM_HPS")) {
    const json hyperparameters = json::parse(*raw, nullptr, /*allow_exceptions=*/false);
    if (hyperparameters.is_discarded() || !hyperparameters.is_object())
      throw ArgumentError("SM_HPS='" + *raw +
                          "' is not a JSON object of hyperparameters (SageMaker writes "
                          "{\"learning_rate\": 2e-05, \"fp16\": true}); fix or unset it");
    for (const auto& [key, value] : hyperparameters.items()) {
      if (reserved(key)) continue;
      if (key.empty())
        throw ArgumentError("SM_HPS holds an empty key (with value " + value.dump() +
                            "); every key names a flag: fix the estimator's hyperparameters");
      const std::string source = "SM_HPS key \"" + key + "\"";
      values.push_back({key, tokens_of(value, source), source});
    }
    return values;
  }
  for (const auto& [name, value] : environment) {
    if (name.rfind(kHyperparameterPrefix, 0) != 0 || value.empty()) continue;
    const std::string key = lower(name.substr(std::string(kHyperparameterPrefix).size()));
    if (key.empty() || reserved(key)) continue;
    values.push_back({key, tokens_of_text(value, name), name});
  }
  return values;
}

std::optional<std::string> sagemaker_channel_file(const EnvironmentMap& environment,
                                                  const std::string& channel,
                                                  const std::vector<std::string>& preferred_names) {
  const std::string variable = kChannelPrefix + upper(channel);
  const auto folder = lookup(environment, variable);
  if (!folder) return std::nullopt;
  std::error_code ec;
  if (!fs::is_directory(*folder, ec))
    throw ArgumentError(variable + "=" + *folder +
                        " is not a folder: SageMaker downloads channel \"" + lower(channel) +
                        "\" there; check the estimator's inputs");
  for (const auto& name : preferred_names)
    if (fs::is_regular_file(fs::path(*folder) / name, ec))
      return (fs::path(*folder) / name).string();
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(*folder, ec))
    if (entry.is_regular_file(ec)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  if (files.size() == 1) return (fs::path(*folder) / files.front()).string();
  std::string listed;
  for (const auto& file : files) listed += (listed.empty() ? "" : ", ") + file;
  std::string wanted;
  for (const auto& name : preferred_names) wanted += (wanted.empty() ? "" : " or ") + name;
  throw ArgumentError(variable + "=" + *folder + " holds " +
                      (files.empty() ? std::string("no file") : listed) + ", and no " + wanted +
                      ": upload one file per channel, or name the split's file " + wanted);
}

std::optional<std::string> sagemaker_checkpoint_dir(const EnvironmentMap& environment) {
  constexpr const char* kDefaultFolder = "/opt/ml/checkpoints";
  std::string path;
  std::error_code ec;
  if (const auto file = lookup(environment, "SM_CHECKPOINT_CONFIG_FILE")) {
    if (!fs::is_regular_file(*file, ec))
      throw ArgumentError("SM_CHECKPOINT_CONFIG_FILE=" + *file +
                          " is not a file: point it at SageMaker's checkpointconfig.json or "
                          "unset it");
    path = *file;
  } else if (const auto folder = lookup(environment, "SM_INPUT_CONFIG_DIR")) {
    path = (fs::path(*folder) / "checkpointconfig.json").string();
    if (!fs::exists(path, ec)) return std::nullopt;  // no checkpoint_s3_uri in the estimator
  } else {
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof())
    throw ArgumentError("cannot read SageMaker's checkpoint configuration " + path);
  const json config = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object())
    throw ArgumentError(
        path +
        " is not a JSON object: SageMaker writes {\"LocalPath\": "
        "\"/opt/ml/checkpoints\", \"S3Uri\": \"s3://...\"} there; fix or remove it");
  const auto local = config.find("LocalPath");
  if (local == config.end() || local->is_null()) return kDefaultFolder;
  if (!local->is_string())
    throw ArgumentError(path + ": \"LocalPath\" is " + local->dump() +
                        ", not a folder's path; fix or remove it");
  const std::string& folder = local->get_ref<const std::string&>();
  return folder.empty() ? std::string(kDefaultFolder) : folder;
}

std::optional<std::string> sagemaker_model_dir(const EnvironmentMap& environment) {
  return lookup(environment, "SM_MODEL_DIR");
}

std::optional<std::string> sagemaker_output_data_dir(const EnvironmentMap& environment) {
  return lookup(environment, "SM_OUTPUT_DATA_DIR");
}

}  // namespace ctrainer
