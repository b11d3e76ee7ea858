// --report_to mlflow without a real server: Python's str() of values (MLflow params), HF's
// flatten_dict and metric-name sanitising, the environment (HF's and MLflow's variables), the
// REST calls and their retries against a fake loopback server, and a server that is down or
// answers errors never reaching the trainer. The real MLflow server is in
// tests/parity/mlflow_tracking.py.
#include <chrono>
#include <cstdlib>

#include <gtest/gtest.h>

#include <ctrainer/integrations/mlflow/mlflow_client.h>
#include <ctrainer/integrations/mlflow/mlflow_settings.h>
#include <ctrainer/integrations/mlflow/python_str.h>
#include <ctrainer/integrations/mlflow/run_logger.h>
#include <ctrainer/trainer/callbacks/mlflow_callback.h>
#include <ctrainer/trainer/callbacks/report_to.h>

#include "support/expect_error.h"
#include "support/fake_http_server.h"
#include "support/process.h"

namespace ctrainer {
namespace mlflow_test {

using nlohmann::json;
using testing::FakeHttpServer;

TEST(PythonStr, FloatsAsPythonRepr) {
  // Golden values printed by CPython's repr().
  const std::vector<std::pair<double, std::string>> cases = {
      {5e-05, "5e-05"},
      {0.001, "0.001"},
      {3.0, "3.0"},
      {1e16, "1e+16"},
      {1.5e16, "1.5e+16"},
      {123456789012345680.0, "1.2345678901234568e+17"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {-2.5, "-2.5"},
      {1e15, "1000000000000000.0"},
      {0.1 + 0.2, "0.30000000000000004"},
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {1e-4 * 3, "0.00030000000000000003"},
      {1234.5, "1234.5"},
      {1e22, "1e+22"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {std::nan(""), "nan"},
      {-HUGE_VAL, "-inf"},
  };
  for (const auto& [value, expected] : cases) EXPECT_EQ(mlflow::python_float_repr(value), expected);
}

TEST(PythonStr, ValuesAsPythonStr) {
  EXPECT_EQ(mlflow::python_str(true), "True");
  EXPECT_EQ(mlflow::python_str(json(nullptr)), "None");
  EXPECT_EQ(mlflow::python_str(42), "42");
  EXPECT_EQ(mlflow::python_str(2e-5), "2e-05");
  EXPECT_EQ(mlflow::python_str("linear"), "linear");
  EXPECT_EQ(mlflow::python_str(json::array({"tensorboard"})), "['tensorboard']");
  // CPython: str(["it's", 'a\\b', 1.0, None, True])
  EXPECT_EQ(mlflow::python_str(json::array({"it's", "a\\b", 1.0, nullptr, true})),
            R"(["it's", 'a\\b', 1.0, None, True])");
  EXPECT_EQ(mlflow::python_str(json{{"a", 1}, {"b", "x"}, {"c", {0.5}}}),
            "{'a': 1, 'b': 'x', 'c': [0.5]}");
  EXPECT_EQ(mlflow::python_str(json::array()), "[]");
}

TEST(PythonStr, FlattenAndSanitize) {
  const json nested = {{"a", {{"b", 1}, {"c", json::object()}, {"d", {{"e", "x"}}}}}, {"f", 2}};
  EXPECT_EQ(mlflow::flatten_dict(nested),
            (json{{"a.b", 1}, {"a.c", json::object()}, {"a.d.e", "x"}, {"f", 2}}));
  EXPECT_EQ(mlflow::sanitize_metric_key("eval_f1(macro)+x"), "eval_f1_macro__x");
  EXPECT_EQ(mlflow::sanitize_metric_key("train/loss: a-b.c d"), "train/loss: a-b.c d");
}

mlflow::Environment with_uri(mlflow::Environment environment) {
  environment.emplace("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000");
  return environment;
}

TEST(MlflowSettings, DefaultsAreMlflowsAndHfs) {
  const auto settings = mlflow::read_settings(with_uri({}));
  EXPECT_EQ(settings.server.tracking_uri, "http://127.0.0.1:5000");
  EXPECT_EQ(settings.server.max_retries, 7);
  EXPECT_EQ(settings.server.backoff_factor, 2);
  EXPECT_EQ(settings.server.backoff_jitter, 1);
  EXPECT_EQ(settings.server.http.timeout_seconds, 120);
  EXPECT_FALSE(settings.nested_run);
  EXPECT_FALSE(settings.flatten_params);
  EXPECT_FALSE(settings.experiment_name || settings.run_id || settings.max_log_params);
  EXPECT_TRUE(settings.tags.empty());
}

TEST(MlflowSettings, ReadsEveryVariable) {
  const auto settings = mlflow::read_settings(with_uri({
      {"MLFLOW_EXPERIMENT_NAME", "glue"},
      {"MLFLOW_EXPERIMENT_ID", "7"},
      {"MLFLOW_RUN_ID", "abc"},
      {"MLFLOW_NESTED_RUN", "yes"},
      {"MLFLOW_FLATTEN_PARAMS", "TRUE"},
      {"MLFLOW_MAX_LOG_PARAMS", "12"},
      {"MLFLOW_TAGS", R"({"release.candidate": "RC1", "n": 2, "ok": true})"},
      {"MLFLOW_TRACKING_TOKEN", "secret"},
      {"MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0"},
      {"MLFLOW_HTTP_REQUEST_TIMEOUT", "2.5"},
      {"HF_MLFLOW_LOG_ARTIFACTS", "false"},
  }));
  EXPECT_EQ(settings.experiment_name, "glue");
  EXPECT_EQ(settings.experiment_id, "7");
  EXPECT_EQ(settings.run_id, "abc");
  EXPECT_TRUE(settings.nested_run);
  EXPECT_TRUE(settings.flatten_params);
  EXPECT_EQ(settings.max_log_params, 12u);
  EXPECT_EQ(settings.tags,
            (mlflow::KeyValues{{"n", "2"}, {"ok", "True"}, {"release.candidate", "RC1"}}));
  EXPECT_EQ(settings.server.http.bearer_token, "secret");
  EXPECT_EQ(settings.server.max_retries, 0);
  EXPECT_EQ(settings.server.http.timeout_seconds, 2.5);
}

TEST(MlflowSettings, BadEnvironmentIsRefusedWithTheFix) {
  using testing::expect_error;
  expect_error([] { mlflow::read_settings({}); },
               {"--report_to mlflow needs MLFLOW_TRACKING_URI", "mlflow server",
                "MLFLOW_TRACKING_URI=http://127.0.0.1:5000"});
  expect_error(
      [] {
        mlflow::read_settings({{"MLFLOW_TRACKING_URI", "file:///tmp/mlruns"}});
      },
      {"MLFLOW_TRACKING_URI=file:///tmp/mlruns", "http:// or https://"});
  expect_error(
      [] {
        mlflow::read_settings(with_uri({{"MLFLOW_NESTED_RUN", "maybe"}}));
      },
      {"MLFLOW_NESTED_RUN=maybe is not a boolean"});
  expect_error(
      [] {
        mlflow::read_settings(with_uri({{"MLFLOW_TAGS", "[1, 2]"}}));
      },
      {"MLFLOW_TAGS is not a JSON object", "release.candidate"});
  expect_error(
      [] {
        mlflow::read_settings(with_uri({{"MLFLOW_TAGS", "{oops"}}));
      },
      {"MLFLOW_TAGS is not a JSON object"});
  expect_error(
      [] {
        mlflow::read_settings(with_uri({{"MLFLOW_MAX_LOG_PARAMS", "ten"}}));
      },
      {"MLFLOW_MAX_LOG_PARAMS=ten is not a whole number >= 0"});
  expect_error(
      [] {
        mlflow::read_settings(with_uri({{"MLFLOW_HTTP_REQUEST_TIMEOUT", "0"}}));
      },
      {"MLFLOW_HTTP_REQUEST_TIMEOUT=0 is not a number >= 1.0"});
  expect_error(
      [] {
        mlflow::read_settings(with_uri({{"MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1.5"}}));
      },
      {"MLFLOW_HTTP_REQUEST_MAX_RETRIES=1.5 is not a whole number >= 0"});
  expect_error(
      [] {
        mlflow::read_settings(with_uri({{"MLFLOW_TRACKING_USERNAME", "me"}}));
      },
      {"MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD go together"});
  expect_error(
      [] {
        mlflow::read_settings(with_uri({{"MLFLOW_TRACKING_INSECURE_TLS", "true"},
                                        {"MLFLOW_TRACKING_SERVER_CERT_PATH", "/ca.pem"}}));
      },
      {"cannot both be set"});
  expect_error(
      [] {
        mlflow::read_settings(with_uri({{"DISABLE_MLFLOW_INTEGRATION", "TRUE"}}));
      },
      {"DISABLE_MLFLOW_INTEGRATION is true"});
  expect_error(
      [] {
        mlflow::read_settings(with_uri({{"HF_MLFLOW_LOG_ARTIFACTS", "1"}}));
      },
      {"not supported yet: --report_to mlflow", "HF_MLFLOW_LOG_ARTIFACTS"});
  EXPECT_FALSE(mlflow::mlflow_configured({}));
  EXPECT_TRUE(mlflow::mlflow_configured(with_uri({})));
  EXPECT_FALSE(mlflow::mlflow_configured(with_uri({{"DISABLE_MLFLOW_INTEGRATION", "1"}})));
}

TEST(MlflowParams, ModelConfigThenArgumentsAsHfLogsThem) {
  mlflow::Settings settings;
  const json config = {
      {"hidden_size", 128}, {"learning_rate", "from config"}, {"nested", {{"x", 1}}}};
  const json arguments = {{"learning_rate", 2e-5},
                          {"fp16", false},
                          {"report_to", {"mlflow"}},
                          {"run_name", nullptr},
                          {"huge", std::string(6001, 'x')}};
  std::vector<std::string> too_long;
  const auto params = mlflow_params(arguments, &config, settings, &too_long);
  EXPECT_EQ(params, (mlflow::KeyValues{{"fp16", "False"},
                                       {"hidden_size", "128"},
                                       {"learning_rate", "2e-05"},
                                       {"nested", "{'x': 1}"},
                                       {"report_to", "['mlflow']"},
                                       {"run_name", "None"}}));
  EXPECT_EQ(too_long, std::vector<std::string>{"huge"});

  settings.flatten_params = true;
  settings.max_log_params = 4;
  const auto flat = mlflow_params(arguments, &config, settings, nullptr);
  EXPECT_EQ(flat, (mlflow::KeyValues{{"fp16", "False"},
                                     {"hidden_size", "128"},
                                     {"learning_rate", "2e-05"},
                                     {"nested.x", "1"}}));
}

mlflow::ServerOptions options_for(const std::string& uri, int retries) {
  mlflow::ServerOptions options;
  options.tracking_uri = uri + "/";
  options.max_retries = retries;
  options.backoff_factor = 0;
  options.backoff_jitter = 0;
  options.http.timeout_seconds = 5;
  return options;
}

TEST(MlflowClient, SendsMlflowsRestCalls) {
  FakeHttpServer server([](const FakeHttpServer::Request& request) -> FakeHttpServer::Reply {
    if (request.path.find("experiments/get-by-name") != std::string::npos)
      return {404, R"({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no"})"};
    if (request.path.find("experiments/create") != std::string::npos)
      return {200, R"({"experiment_id": "3"})"};
    if (request.path.find("runs/create") != std::string::npos)
      return {200, R"({"run": {"info": {"run_id": "r1"}}})"};
    return {200, "{}"};
  });
  mlflow::Client client(options_for(server.url(), 0));
  EXPECT_EQ(client.experiment_id_for_name("my exp/1"), "3");
  EXPECT_EQ(client.create_run("3", "name", 1000, {{"k", "v"}}), "r1");
  mlflow::KeyValues params;
  for (int i = 0; i < 150; ++i) params.emplace_back("p" + std::to_string(i), "v");
  client.log_batch("r1", {{"loss", std::nan(""), 5, 2}, {"acc", 0.5, 5, 2}}, params, {});
  client.update_run("r1", "FINISHED", 2000);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 7u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].path,
            "/api/2.0/mlflow/experiments/get-by-name?experiment_name=my%20exp%2F1");
  EXPECT_EQ(json::parse(requests[1].body), (json{{"name", "my exp/1"}}));
  EXPECT_EQ(json::parse(requests[2].body), (json{{"experiment_id", "3"},
                                                 {"run_name", "name"},
                                                 {"start_time", 1000},
                                                 {"tags", {{{"key", "k"}, {"value", "v"}}}}}));
  // 150 params: batches of MLflow's 100, then the metrics (NaN as protobuf's JSON writes it).
  EXPECT_EQ(json::parse(requests[3].body)["params"].size(), 100u);
  EXPECT_EQ(json::parse(requests[4].body)["params"].size(), 50u);
  EXPECT_EQ(json::parse(requests[5].body)["metrics"],
            (json{{{"key", "loss"}, {"value", "NaN"}, {"timestamp", 5}, {"step", 2}},
                  {{"key", "acc"}, {"value", 0.5}, {"timestamp", 5}, {"step", 2}}}));
  EXPECT_EQ(requests[6].path, "/api/2.0/mlflow/runs/update");
  EXPECT_EQ(json::parse(requests[6].body),
            (json{{"run_id", "r1"}, {"status", "FINISHED"}, {"end_time", 2000}}));
}

TEST(MlflowClient, RetriesUnavailableServersNotRefusals) {
  int status = 503;
  FakeHttpServer server([&status](const FakeHttpServer::Request&) -> FakeHttpServer::Reply {
    return {status, R"({"error_code": "TEMPORARILY_UNAVAILABLE", "message": "busy"})"};
  });
  mlflow::Client client(options_for(server.url(), 3));
  try {
    client.update_run("r", "FINISHED", 1);
    ADD_FAILURE() << "no error";
  } catch (const mlflow::RequestError& error) {
    EXPECT_EQ(error.status(), 503);
    EXPECT_TRUE(error.server_unavailable());
    EXPECT_NE(std::string(error.what()).find("answered HTTP 503 TEMPORARILY_UNAVAILABLE: busy"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(server.requests().size(), 4u);  // the try and 3 retries
  status = 400;
  EXPECT_THROW(client.update_run("r", "FINISHED", 1), mlflow::RequestError);
  EXPECT_EQ(server.requests().size(), 5u);  // a refusal is not retried
}

struct CapturedReports {
  std::vector<std::string> warnings;
  std::mutex mutex;
  mlflow::Reports reports() {
    return {nullptr, [this](const std::string& text) {
              std::lock_guard<std::mutex> lock(mutex);
              warnings.push_back(text);
            }};
  }
};

TEST(MlflowRunLogger, ServerDownIsReportedOnceAndDropsTheRest) {
  CapturedReports captured;
  const auto start = std::chrono::steady_clock::now();
  {
    mlflow::RunLogger logger(
        options_for("http://127.0.0.1:" + std::to_string(testing::free_port()), 1),
        captured.reports());
    logger.start({});
    for (int step = 0; step < 5; ++step) logger.log_metrics({{"loss", 1.0, 0, step}});
    logger.finish("FINISHED");
    EXPECT_EQ(logger.run_id(), "");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_EQ(captured.warnings.size(), 2u);
  EXPECT_NE(captured.warnings[0].find("no longer reporting to MLflow (training goes on)"),
            std::string::npos)
      << captured.warnings[0];
  EXPECT_NE(captured.warnings[1].find("6 logging call(s) were dropped"), std::string::npos)
      << captured.warnings[1];
}

TEST(MlflowRunLogger, TrainEndDoesNotWaitForAServerThatNeverAnswered) {
  // MLflow's default retries (7, backoff 2 s doubling: minutes) are left running in the
  // background; train end must not sit through them.
  mlflow::ServerOptions options;
  options.tracking_uri = "http://127.0.0.1:" + std::to_string(testing::free_port());
  CapturedReports captured;
  const auto start = std::chrono::steady_clock::now();
  {
    mlflow::RunLogger logger(options, captured.reports());
    logger.start({});
    logger.log_metrics({{"loss", 1.0, 0, 1}});
    logger.finish("FINISHED");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(captured.warnings.empty());
  EXPECT_NE(captured.warnings[0].find("no longer reporting to MLflow"), std::string::npos)
      << captured.warnings[0];
}

TEST(MlflowRunLogger, RefusedBatchesAreReportedAndLoggingGoesOn) {
  FakeHttpServer server([](const FakeHttpServer::Request& request) -> FakeHttpServer::Reply {
    if (request.path.find("runs/create") != std::string::npos)
      return {200, R"({"run": {"info": {"run_id": "r9"}}})"};
    if (request.path.find("log-batch") != std::string::npos &&
        request.body.find("\"bad\"") != std::string::npos)
      return {400, R"({"error_code": "INVALID_PARAMETER_VALUE", "message": "no bad"})"};
    return {200, "{}"};
  });
  CapturedReports captured;
  mlflow::RunLogger logger(options_for(server.url(), 2), captured.reports());
  mlflow::RunSpec spec;
  spec.run_name = "run";
  spec.parent_run_id = "parent";
  logger.start(spec);
  logger.log_metrics({{"bad", 1.0, 0, 1}});
  logger.log_metrics({{"good", 2.0, 0, 2}});
  logger.finish("FINISHED");
  EXPECT_EQ(logger.run_id(), "r9");
  ASSERT_EQ(captured.warnings.size(), 1u);
  EXPECT_NE(captured.warnings[0].find("INVALID_PARAMETER_VALUE: no bad; those values were not "
                                      "logged (training goes on)"),
            std::string::npos)
      << captured.warnings[0];
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);  // create, bad (not retried), good, update
  EXPECT_NE(requests[0].body.find(R"({"key":"mlflow.parentRunId","value":"parent"})"),
            std::string::npos);
  EXPECT_NE(requests[2].body.find("\"good\""), std::string::npos);
  EXPECT_NE(requests[3].body.find("FINISHED"), std::string::npos);
}

TEST(MlflowRunLogger, RunNeverFinishedIsMarkedFailed) {
  FakeHttpServer server([](const FakeHttpServer::Request& request) -> FakeHttpServer::Reply {
    if (request.path.find("runs/get") != std::string::npos)
      return {200, R"({"run": {"info": {"run_id": "old"}}})"};
    return {200, "{}"};
  });
  {
    mlflow::RunLogger logger(options_for(server.url(), 0), {});
    mlflow::RunSpec spec;
    spec.resume_run_id = "old";
    spec.tags = {{"team", "nlp"}};
    logger.start(spec);
    logger.flush(5);
    EXPECT_EQ(logger.run_id(), "old");
  }  // as when training throws: no finish()
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].path, "/api/2.0/mlflow/runs/get?run_id=old");
  EXPECT_EQ(json::parse(requests[1].body), (json{{"run_id", "old"}, {"status", "RUNNING"}}));
  EXPECT_EQ(json::parse(requests[2].body)["tags"],
            (json{{{"key", "team"}, {"value", "nlp"}}}));  // a resumed run's tags
  EXPECT_EQ(json::parse(requests[3].body)["status"], "FAILED");
}

TEST(ReportTo, AllIncludesMlflowOnlyWhenATrackingUriIsSet) {
  TrainingArguments args;
  args.report_to = {"all"};
  ::unsetenv("MLFLOW_TRACKING_URI");
  EXPECT_EQ(report_to_callbacks(args).size(), 1u);
  args.report_to = {"mlflow"};
  testing::expect_error([&] { report_to_callbacks(args); }, {"needs MLFLOW_TRACKING_URI"});
  ::setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1", 1);
  args.report_to = {"all"};
  const auto callbacks = report_to_callbacks(args);
  ASSERT_EQ(callbacks.size(), 2u);
  EXPECT_EQ(callbacks[1]->name(), "MLflowCallback");
  ::unsetenv("MLFLOW_TRACKING_URI");
}

}  // namespace mlflow_test
}  // namespace ctrainer
