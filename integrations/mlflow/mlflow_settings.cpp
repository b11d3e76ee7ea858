#include <ctrainer/integrations/mlflow/mlflow_settings.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/mlflow/python_str.h>

namespace ctrainer::mlflow {
namespace {

std::optional<std::string> get(const Environment& environment, const std::string& name) {
  const auto it = environment.find(name);
  if (it == environment.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return text;
}

/// transformers' ENV_VARS_TRUE_VALUES ({1, ON, YES, TRUE}) and their opposites, any case;
/// anything else is an error rather than a silent "false".
bool flag(const Environment& environment, const std::string& name, bool fallback) {
  const auto value = get(environment, name);
  if (!value) return fallback;
  const std::string v = upper(*value);
  if (v == "1" || v == "ON" || v == "YES" || v == "TRUE") return true;
  if (v == "0" || v == "OFF" || v == "NO" || v == "FALSE") return false;
  throw ArgumentError(name + "=" + *value +
                      " is not a boolean: use true or false (1/0, yes/no, on/off)");
}

double number(const Environment& environment, const std::string& name, double fallback,
              double minimum, bool integer) {
  const auto value = get(environment, name);
  if (!value) return fallback;
  char* end = nullptr;
  const double parsed = std::strtod(value->c_str(), &end);
  const bool whole = parsed == static_cast<double>(static_cast<long long>(parsed));
  if (end == value->c_str() || *end != '\0' || !(parsed >= minimum) || (integer && !whole))
    throw ArgumentError(
        name + "=" + *value + " is not " +
        (integer ? "a whole number >= " + std::to_string(static_cast<long long>(minimum))
                 : "a number >= " + python_float_repr(minimum)));
  return parsed;
}

KeyValues tags_of(const std::string& text) {
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object())
    throw ArgumentError("MLFLOW_TAGS is not a JSON object (" + text.substr(0, 80) +
                        "): write it as '{\"release.candidate\": \"RC1\", \"team\": \"nlp\"}'");
  KeyValues tags;
  for (const auto& [key, value] : parsed.items()) tags.emplace_back(key, python_str(value));
  return tags;
}

}  // namespace

bool mlflow_configured(const Environment& environment) {
  return get(environment, "MLFLOW_TRACKING_URI").has_value() &&
         !flag(environment, "DISABLE_MLFLOW_INTEGRATION", false);
}

Settings read_settings(const Environment& environment) {
  if (flag(environment, "DISABLE_MLFLOW_INTEGRATION", false))
    throw ArgumentError(
        "--report_to mlflow while DISABLE_MLFLOW_INTEGRATION is true: unset the variable, or "
        "drop mlflow from --report_to");
  if (flag(environment, "HF_MLFLOW_LOG_ARTIFACTS", false))
    throw NotSupportedYet("report_to mlflow",
                          "HF_MLFLOW_LOG_ARTIFACTS: checkpoints are not uploaded as MLflow "
                          "artifacts; unset it (checkpoints stay in --output_dir)");
  Settings settings;
  const auto uri = get(environment, "MLFLOW_TRACKING_URI");
  if (!uri)
    throw ArgumentError(
        "--report_to mlflow needs MLFLOW_TRACKING_URI, the http(s) address of an MLflow "
        "tracking server: start one (mlflow server --host 127.0.0.1 --port 5000) and set "
        "MLFLOW_TRACKING_URI=http://127.0.0.1:5000");
  if (uri->rfind("http://", 0) != 0 && uri->rfind("https://", 0) != 0)
    throw ArgumentError("MLFLOW_TRACKING_URI=" + *uri +
                        ": ctrainer logs over MLflow's REST API, so the URI must start with "
                        "http:// or https://; local file or database stores are written by "
                        "MLflow's Python client only: serve one with mlflow server "
                        "--backend-store-uri <it> and point MLFLOW_TRACKING_URI at the server");
  settings.server.tracking_uri = *uri;
  auto& http = settings.server.http;
  http.bearer_token = get(environment, "MLFLOW_TRACKING_TOKEN");
  http.username = get(environment, "MLFLOW_TRACKING_USERNAME");
  http.password = get(environment, "MLFLOW_TRACKING_PASSWORD");
  if (http.username.has_value() != http.password.has_value())
    throw ArgumentError(
        "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD go together: set both or neither");
  http.insecure_tls = flag(environment, "MLFLOW_TRACKING_INSECURE_TLS", false);
  http.ca_certificate_path = get(environment, "MLFLOW_TRACKING_SERVER_CERT_PATH");
  http.client_certificate_path = get(environment, "MLFLOW_TRACKING_CLIENT_CERT_PATH");
  if (http.insecure_tls && http.ca_certificate_path)
    throw ArgumentError(
        "MLFLOW_TRACKING_INSECURE_TLS and MLFLOW_TRACKING_SERVER_CERT_PATH cannot both be set "
        "(one skips the certificate check, the other verifies with a given CA): unset one");
  http.timeout_seconds = number(environment, "MLFLOW_HTTP_REQUEST_TIMEOUT", 120, 1, false);
  settings.server.max_retries =
      static_cast<int>(number(environment, "MLFLOW_HTTP_REQUEST_MAX_RETRIES", 7, 0, true));
  settings.server.backoff_factor =
      number(environment, "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", 2, 0, false);
  settings.server.backoff_jitter =
      number(environment, "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", 1, 0, false);

  settings.experiment_name = get(environment, "MLFLOW_EXPERIMENT_NAME");
  settings.experiment_id = get(environment, "MLFLOW_EXPERIMENT_ID");
  settings.run_id = get(environment, "MLFLOW_RUN_ID");
  settings.nested_run = flag(environment, "MLFLOW_NESTED_RUN", false);
  settings.flatten_params = flag(environment, "MLFLOW_FLATTEN_PARAMS", false);
  if (get(environment, "MLFLOW_MAX_LOG_PARAMS"))
    settings.max_log_params =
        static_cast<size_t>(number(environment, "MLFLOW_MAX_LOG_PARAMS", 0, 0, true));
  if (const auto tags = get(environment, "MLFLOW_TAGS")) settings.tags = tags_of(*tags);
  return settings;
}

}  // namespace ctrainer::mlflow
