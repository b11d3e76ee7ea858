#pragma once
/// \file What --report_to mlflow reads from the environment: HF's MLflowCallback variables
/// (MLFLOW_TRACKING_URI, MLFLOW_EXPERIMENT_NAME, MLFLOW_RUN_ID, MLFLOW_NESTED_RUN, MLFLOW_TAGS,
/// MLFLOW_FLATTEN_PARAMS, MLFLOW_MAX_LOG_PARAMS, HF_MLFLOW_LOG_ARTIFACTS,
/// DISABLE_MLFLOW_INTEGRATION) and those of MLflow's own client for reaching the server
/// (MLFLOW_EXPERIMENT_ID, MLFLOW_TRACKING_TOKEN / _USERNAME / _PASSWORD / _INSECURE_TLS /
/// _SERVER_CERT_PATH / _CLIENT_CERT_PATH, MLFLOW_HTTP_REQUEST_TIMEOUT / _MAX_RETRIES /
/// _BACKOFF_FACTOR / _BACKOFF_JITTER), with their defaults.
#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include <ctrainer/integrations/mlflow/mlflow_client.h>

namespace ctrainer::mlflow {

using Environment = std::map<std::string, std::string>;

struct Settings {
  ServerOptions server;
  std::optional<std::string> experiment_name;
  std::optional<std::string> experiment_id;
  /// MLFLOW_RUN_ID: the run to log to again, or with nested_run the parent of a new run.
  std::optional<std::string> run_id;
  bool nested_run = false;
  bool flatten_params = false;
  std::optional<size_t> max_log_params;
  /// MLFLOW_TAGS, values as Python's str() makes them.
  KeyValues tags;
};

/// Whether "--report_to all" includes MLflow: a tracking URI is set and
/// DISABLE_MLFLOW_INTEGRATION is not true.
bool mlflow_configured(const Environment& environment);

/// The settings of --report_to mlflow. Throws ArgumentError naming the variable and the fix
/// for: no MLFLOW_TRACKING_URI, or one that is not http(s):// (file and database stores are
/// written by MLflow's Python client only); a malformed boolean, number or MLFLOW_TAGS; both
/// MLFLOW_TRACKING_INSECURE_TLS and MLFLOW_TRACKING_SERVER_CERT_PATH; DISABLE_MLFLOW_INTEGRATION
/// true. NotSupportedYet for HF_MLFLOW_LOG_ARTIFACTS true.
Settings read_settings(const Environment& environment);

}  // namespace ctrainer::mlflow
