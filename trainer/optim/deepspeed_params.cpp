#include <ctrainer/trainer/optim/deepspeed_params.h>

#include <algorithm>
#include <utility>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>

namespace ctrainer::deepspeed_detail {
namespace {

const nlohmann::json& null_json() {
  static const nlohmann::json null;
  return null;
}

}  // namespace

DsParams::DsParams(const nlohmann::json& params, std::string section, std::string type,
                   const std::vector<std::string>& allowed)
    : params_(params), section_(std::move(section)), type_(std::move(type)) {
  if (!params_.is_object() && !params_.is_null()) {
    throw ArgumentError(section_ + ".params must be a JSON object, got " + params_.dump());
  }
  if (params_.is_null()) return;
  for (const auto& item : params_.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      throw ArgumentError(path(item.key()) + " is not a parameter of " + section_ + " type \"" +
                          type_ + "\"; remove it (the accepted parameters are: " + join(allowed) +
                          ")");
    }
  }
}

bool DsParams::has(const std::string& key) const {
  return params_.is_object() && params_.contains(key) && !params_.at(key).is_null();
}

std::string DsParams::path(const std::string& key) const {
  return section_ + ".params." + key;
}

const nlohmann::json& DsParams::value(const std::string& key) const {
  if (!params_.is_object() || !params_.contains(key)) return null_json();
  const auto& v = params_.at(key);
  // The config loader replaces "auto" from TrainingArguments before anything is built; one that
  // reaches here has no TrainingArguments counterpart (or the loader was bypassed).
  if (v.is_string() && v.get<std::string>() == "auto") {
    throw ArgumentError(path(key) +
                        " is still \"auto\": \"auto\" values are filled from the training "
                        "arguments when the DeepSpeed config is loaded, and this one was not; "
                        "write an explicit value in the config");
  }
  return v;
}

void DsParams::type_error(const std::string& key, const std::string& expected) const {
  throw ArgumentError(path(key) + " must be " + expected + ", got " + value(key).dump());
}

double DsParams::number(const std::string& key, double fallback) const {
  const auto& v = value(key);
  if (v.is_null()) return fallback;
  if (!v.is_number()) type_error(key, "a number");
  return v.get<double>();
}

double DsParams::required_number(const std::string& key) const {
  if (!has(key)) {
    throw ArgumentError(path(key) + " is required for " + section_ + " type \"" + type_ +
                        "\"; add it to the config");
  }
  return number(key, 0.0);
}

int64_t DsParams::integer(const std::string& key, int64_t fallback) const {
  const auto& v = value(key);
  if (v.is_null()) return fallback;
  if (!v.is_number_integer()) type_error(key, "an integer");
  return v.get<int64_t>();
}

int64_t DsParams::required_integer(const std::string& key) const {
  if (!has(key)) {
    throw ArgumentError(path(key) + " is required for " + section_ + " type \"" + type_ +
                        "\"; add it to the config");
  }
  return integer(key, 0);
}

std::optional<int64_t> DsParams::optional_integer(const std::string& key) const {
  if (value(key).is_null()) return std::nullopt;
  return integer(key, 0);
}

bool DsParams::boolean(const std::string& key, bool fallback) const {
  const auto& v = value(key);
  if (v.is_null()) return fallback;
  if (!v.is_boolean()) type_error(key, "true or false");
  return v.get<bool>();
}

std::string DsParams::string(const std::string& key, const std::string& fallback) const {
  const auto& v = value(key);
  if (v.is_null()) return fallback;
  if (!v.is_string()) type_error(key, "a string");
  return v.get<std::string>();
}

std::optional<std::vector<double>> DsParams::per_group(const std::string& key,
                                                       size_t num_groups) const {
  const auto& v = value(key);
  if (v.is_null()) return std::nullopt;
  if (v.is_number()) return std::vector<double>(num_groups, v.get<double>());
  if (!v.is_array()) type_error(key, "a number or a list of numbers (one per param group)");
  if (v.size() != num_groups) {
    throw ArgumentError(path(key) + " lists " + std::to_string(v.size()) +
                        " values but the optimizer has " + std::to_string(num_groups) +
                        " param groups; give one value per group, or a single number for all");
  }
  std::vector<double> out;
  for (const auto& item : v) {
    if (!item.is_number()) type_error(key, "a number or a list of numbers (one per param group)");
    out.push_back(item.get<double>());
  }
  return out;
}

std::vector<double> DsParams::number_list(const std::string& key, size_t size,
                                          const std::vector<double>& fallback) const {
  const auto& v = value(key);
  if (v.is_null()) return fallback;
  const std::string expected = "a list of " + std::to_string(size) + " numbers";
  if (!v.is_array() || v.size() != size) type_error(key, expected);
  std::vector<double> out;
  for (const auto& item : v) {
    if (!item.is_number()) type_error(key, expected);
    out.push_back(item.get<double>());
  }
  return out;
}

}  // namespace ctrainer::deepspeed_detail
