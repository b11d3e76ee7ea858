#pragma once
/// \file What Python's str() makes of a JSON value, and transformers' flatten_dict: HF's
/// MLflowCallback logs every TrainingArguments field and model config entry as an MLflow param,
/// and MLflow stores a param as str(value). Writing the same strings makes our runs compare
/// equal to HF's in MLflow's UI ("True", "5e-05", "['tensorboard']", "None").
#include <string>

#include <nlohmann/json.hpp>

namespace ctrainer::mlflow {

/// Python's str() of the value json.loads() would give: strings as they are, true/false as
/// "True"/"False", null as "None", integers in decimal, floats as Python's repr (the shortest
/// digits that round-trip: "5e-05", "0.001", "3.0", "1e+16", "nan", "inf"), arrays and objects
/// as Python's list and dict reprs (strings inside quoted as repr() quotes them).
std::string python_str(const nlohmann::json& value);

/// Python's repr() of a float (see python_str).
std::string python_float_repr(double value);

/// transformers' flatten_dict(d, delimiter="."): nested non-empty objects become keys joined
/// with "."; everything else is kept as it is.
nlohmann::json flatten_dict(const nlohmann::json& object);

/// HF's metric-name sanitising for MLflow: every character outside [0-9A-Za-z_\-. :/] becomes
/// "_" (MLflow refuses them).
std::string sanitize_metric_key(const std::string& key);

}  // namespace ctrainer::mlflow
