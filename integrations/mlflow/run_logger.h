#pragma once
/// \file Logging to one MLflow run from a background thread, so that training never waits for
/// the tracking server (HF's MLflowCallback logs with synchronous=False for the same reason) and
/// never stops because of it: a refused request (4xx) is reported and the next one goes on; a
/// server that cannot be reached after MLflow's retries is reported once and nothing more is
/// sent (later values are counted as dropped).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <ctrainer/integrations/mlflow/mlflow_client.h>

namespace ctrainer::mlflow {

/// Which run to log to, and what to log first.
struct RunSpec {
  /// The experiment of a new run: by name (created if missing), else by id, else "0" (MLflow's
  /// "Default").
  std::optional<std::string> experiment_name;
  std::optional<std::string> experiment_id;
  /// An existing run to log to again (set RUNNING): MLFLOW_RUN_ID.
  std::optional<std::string> resume_run_id;
  /// A new run nested under this one (the mlflow.parentRunId tag).
  std::optional<std::string> parent_run_id;
  std::string run_name;
  KeyValues params;
  KeyValues tags;  ///< system tags (mlflow.user, ...) and the user's MLFLOW_TAGS
};

/// Where the logger's reports go (the trainer's log).
struct Reports {
  std::function<void(const std::string&)> info;
  std::function<void(const std::string&)> warning;
};

class RunLogger {
 public:
  RunLogger(ServerOptions server, Reports reports);
  /// A run still open (training threw) is ended as FAILED; requests still queued are tried once
  /// each, without waiting between retries.
  ~RunLogger();
  RunLogger(const RunLogger&) = delete;
  RunLogger& operator=(const RunLogger&) = delete;

  /// Queues the run's creation (or reopening) and its params and tags.
  void start(RunSpec spec);
  /// Queues one batch of metrics.
  void log_metrics(std::vector<Metric> metrics);
  /// Queues the run's end with `status` ("FINISHED") and flushes: with the patience of
  /// kFinishPatienceSeconds (at most the request timeout) when the server has answered before,
  /// none when it never did, so that a job never waits minutes at its end for a server that is
  /// down. Later log_metrics calls still go to the run (MLflow accepts metrics for an ended run).
  void finish(const std::string& status);
  static constexpr double kFinishPatienceSeconds = 30;
  /// Waits until everything queued so far was sent or given up. After `patience` seconds of
  /// waiting, retries stop (each request left is tried once), so that the end of training
  /// waits at most about patience + one request's timeout for an unavailable server.
  void flush(double patience_seconds);

  /// The run's id once created (empty before, or when there is none).
  std::string run_id() const;
  /// How many queued operations were dropped because the server was unavailable.
  int dropped() const;

 private:
  void enqueue(std::function<void()> task);
  void work();
  void run_task(const std::function<void()>& task);
  void open_run(const RunSpec& spec);

  Client client_;
  Reports reports_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  bool unavailable_ = false;  // the server could not be reached: send nothing more
  bool started_ = false;      // start() was called
  bool server_answered_ = false;
  bool finish_called_ = false;
  double patience_seconds_;
  std::string run_id_;
  int dropped_ = 0;
  std::thread worker_;
};

}  // namespace ctrainer::mlflow
