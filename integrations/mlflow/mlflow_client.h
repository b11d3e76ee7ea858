#pragma once
/// \file The calls of MLflow's tracking REST API (/api/2.0/mlflow/...) that a training run
/// makes: find or create an experiment, create / read / end a run, log params, tags and metrics
/// in batches within MLflow's limits. Retries as MLflow's Python client does (HTTP 429 and 5xx
/// answers and unreachable servers; MLFLOW_HTTP_REQUEST_MAX_RETRIES, _BACKOFF_FACTOR, _JITTER).
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/integrations/mlflow/http_client.h>

namespace ctrainer::mlflow {

/// MLflow's limits on one log-batch request (mlflow/utils/validation.py).
inline constexpr size_t kMaxParamsTagsPerBatch = 100;
inline constexpr size_t kMaxMetricsPerBatch = 1000;
/// MLflow refuses param values longer than this (MAX_PARAM_VAL_LENGTH).
inline constexpr size_t kMaxParamValueLength = 6000;

/// Where the tracking server is and how to talk to it.
struct ServerOptions {
  std::string tracking_uri;  ///< http(s)://host[:port][/prefix]
  http::ClientOptions http;
  int max_retries = 7;          ///< retries after the first try
  double backoff_factor = 2;    ///< seconds; the k-th retry waits factor * 2^(k-1) (k >= 2)
  double backoff_jitter = 1.0;  ///< up to this many seconds added at random to each wait
};

/// A request that failed: the server answered an error, or (status 0) could not be reached.
class RequestError : public std::runtime_error {
 public:
  RequestError(const std::string& message, long status, std::string error_code)
      : std::runtime_error(message), status_(status), error_code_(std::move(error_code)) {}
  /// The HTTP status; 0 when there was no answer.
  long status() const { return status_; }
  /// MLflow's error_code ("RESOURCE_DOES_NOT_EXIST", ...), empty when the body had none.
  const std::string& error_code() const { return error_code_; }
  /// No answer, or an overloaded/failing server after every retry: later requests will fare no
  /// better, unlike a request the server refused (4xx).
  bool server_unavailable() const { return status_ == 0 || status_ == 429 || status_ >= 500; }

 private:
  long status_;
  std::string error_code_;
};

/// One metric value at a step.
struct Metric {
  std::string key;
  double value = 0;
  int64_t timestamp_ms = 0;
  int64_t step = 0;
};

using KeyValues = std::vector<std::pair<std::string, std::string>>;

/// Milliseconds since the Unix epoch: MLflow's timestamps.
int64_t now_ms();

/// A client of one tracking server. Methods throw RequestError; they are not thread-safe.
class Client {
 public:
  explicit Client(ServerOptions options);

  /// The id of the experiment called `name`, created when there is none (as mlflow's
  /// set_experiment). Throws RequestError, or std::runtime_error for a deleted experiment.
  std::string experiment_id_for_name(const std::string& name);
  /// Creates a run (status RUNNING) and returns its run_id.
  std::string create_run(const std::string& experiment_id, const std::string& run_name,
                         int64_t start_time_ms, const KeyValues& tags);
  /// The run's JSON ({"info": ..., "data": ...}).
  nlohmann::json get_run(const std::string& run_id);
  /// Sets the run's status ("RUNNING", "FINISHED", "FAILED", "KILLED"); end_time_ms when > 0.
  void update_run(const std::string& run_id, const std::string& status, int64_t end_time_ms);
  /// Logs everything, split into requests within MLflow's per-batch limits.
  void log_batch(const std::string& run_id, const std::vector<Metric>& metrics,
                 const KeyValues& params, const KeyValues& tags);

  /// Stops waiting between retries (from any thread): each request is tried once from now on.
  void stop_retrying() { stop_retrying_ = true; }
  const ServerOptions& options() const { return options_; }

 private:
  nlohmann::json call(const std::string& method, const std::string& endpoint,
                      const nlohmann::json& body);
  nlohmann::json call_once(const std::string& method, const std::string& endpoint,
                           const nlohmann::json& body);
  ServerOptions options_;
  std::atomic<bool> stop_retrying_{false};
};

}  // namespace ctrainer::mlflow
