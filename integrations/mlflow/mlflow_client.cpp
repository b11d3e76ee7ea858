#include <ctrainer/integrations/mlflow/mlflow_client.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

namespace ctrainer::mlflow {
namespace {

using nlohmann::json;

json key_values_json(KeyValues::const_iterator begin, KeyValues::const_iterator end) {
  json out = json::array();
  for (auto it = begin; it != end; ++it) out.push_back({{"key", it->first}, {"value", it->second}});
  return out;
}

/// A metric value as protobuf's JSON mapping writes a double: non-finite values as strings.
json metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

/// The k-th retry's wait (urllib3's Retry, which MLflow's client uses, capped at 120 s).
double backoff_seconds(int retry, const ServerOptions& options) {
  if (retry <= 1) return 0;
  static thread_local std::mt19937 random{std::random_device{}()};
  const double wait = std::min(120.0, options.backoff_factor * std::pow(2.0, retry - 1));
  return wait + std::uniform_real_distribution<double>(0, options.backoff_jitter)(random);
}

/// MLflow's error body {"error_code": ..., "message": ...}, or the start of whatever came.
std::pair<std::string, std::string> error_of(const std::string& body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.contains("message"))
    return {parsed.value("error_code", ""), parsed["message"].is_string()
                                                ? parsed["message"].get<std::string>()
                                                : parsed["message"].dump()};
  return {"", body.substr(0, 300)};
}

}  // namespace

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Client::Client(ServerOptions options) : options_(std::move(options)) {
  while (!options_.tracking_uri.empty() && options_.tracking_uri.back() == '/')
    options_.tracking_uri.pop_back();
}

json Client::call_once(const std::string& method, const std::string& endpoint, const json& body) {
  const std::string url = options_.tracking_uri + "/api/2.0/mlflow/" + endpoint;
  http::Response response;
  try {
    response = http::request(method, url, body.is_null() ? "" : body.dump(), options_.http);
  } catch (const http::TransportError& error) {
    throw RequestError(error.what(), 0, "");
  }
  if (response.status >= 200 && response.status < 300) {
    const json parsed = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded())
      throw RequestError(
          method + " " + url + ": the answer is not JSON: " + response.body.substr(0, 300),
          response.status, "");
    return parsed;
  }
  const auto [code, message] = error_of(response.body);
  throw RequestError(method + " " + url + " answered HTTP " + std::to_string(response.status) +
                         (code.empty() ? "" : " " + code) + ": " + message,
                     response.status, code);
}

json Client::call(const std::string& method, const std::string& endpoint, const json& body) {
  for (int retry = 1;; ++retry) {
    try {
      return call_once(method, endpoint, body);
    } catch (const RequestError& error) {
      if (!error.server_unavailable() || retry > options_.max_retries || stop_retrying_) throw;
    }
    const auto wait = std::chrono::duration<double>(backoff_seconds(retry, options_));
    // Sleeps in short slices so that stop_retrying() takes effect soon.
    const auto until = std::chrono::steady_clock::now() + wait;
    while (!stop_retrying_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string Client::experiment_id_for_name(const std::string& name) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      const json found =
          call("GET", "experiments/get-by-name?experiment_name=" + http::url_encode(name), nullptr);
      const json& experiment = found.at("experiment");
      if (experiment.value("lifecycle_stage", "active") == "deleted")
        throw std::runtime_error("the MLflow experiment \"" + name + "\" (id " +
                                 experiment.value("experiment_id", "?") +
                                 ") is deleted: restore it in MLflow or set another "
                                 "MLFLOW_EXPERIMENT_NAME");
      return experiment.at("experiment_id").get<std::string>();
    } catch (const RequestError& error) {
      if (error.error_code() != "RESOURCE_DOES_NOT_EXIST") throw;
    }
    try {
      return call("POST", "experiments/create", {{"name", name}})
          .at("experiment_id")
          .get<std::string>();
    } catch (const RequestError& error) {
      // Another process created it between our two calls: read it again.
      if (error.error_code() != "RESOURCE_ALREADY_EXISTS") throw;
    }
  }
  throw RequestError("the MLflow experiment \"" + name + "\" could neither be found nor created", 0,
                     "");
}

std::string Client::create_run(const std::string& experiment_id, const std::string& run_name,
                               int64_t start_time_ms, const KeyValues& tags) {
  json body = {{"experiment_id", experiment_id},
               {"start_time", start_time_ms},
               {"tags", key_values_json(tags.begin(), tags.end())}};
  if (!run_name.empty()) body["run_name"] = run_name;
  return call("POST", "runs/create", body).at("run").at("info").at("run_id").get<std::string>();
}

json Client::get_run(const std::string& run_id) {
  return call("GET", "runs/get?run_id=" + http::url_encode(run_id), nullptr).at("run");
}

void Client::update_run(const std::string& run_id, const std::string& status, int64_t end_time_ms) {
  json body = {{"run_id", run_id}, {"status", status}};
  if (end_time_ms > 0) body["end_time"] = end_time_ms;
  call("POST", "runs/update", body);
}

void Client::log_batch(const std::string& run_id, const std::vector<Metric>& metrics,
                       const KeyValues& params, const KeyValues& tags) {
  for (size_t at = 0; at < params.size(); at += kMaxParamsTagsPerBatch) {
    const auto end = params.begin() + std::min(params.size(), at + kMaxParamsTagsPerBatch);
    call("POST", "runs/log-batch",
         {{"run_id", run_id}, {"params", key_values_json(params.begin() + at, end)}});
  }
  for (size_t at = 0; at < tags.size(); at += kMaxParamsTagsPerBatch) {
    const auto end = tags.begin() + std::min(tags.size(), at + kMaxParamsTagsPerBatch);
    call("POST", "runs/log-batch",
         {{"run_id", run_id}, {"tags", key_values_json(tags.begin() + at, end)}});
  }
  for (size_t at = 0; at < metrics.size(); at += kMaxMetricsPerBatch) {
    json batch = json::array();
    for (size_t i = at; i < std::min(metrics.size(), at + kMaxMetricsPerBatch); ++i)
      batch.push_back({{"key", metrics[i].key},
                       {"value", metric_value(metrics[i].value)},
                       {"timestamp", metrics[i].timestamp_ms},
                       {"step", metrics[i].step}});
    call("POST", "runs/log-batch", {{"run_id", run_id}, {"metrics", batch}});
  }
}

}  // namespace ctrainer::mlflow
