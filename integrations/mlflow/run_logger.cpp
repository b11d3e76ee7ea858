#include <ctrainer/integrations/mlflow/run_logger.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

namespace ctrainer::mlflow {

RunLogger::RunLogger(ServerOptions server, Reports reports)
    : client_(std::move(server)),
      reports_(std::move(reports)),
      patience_seconds_(client_.options().http.timeout_seconds) {
  worker_ = std::thread([this] { work(); });
}

RunLogger::~RunLogger() {
  bool end_as_failed = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    end_as_failed = started_ && !finish_called_;
  }
  client_.stop_retrying();
  if (end_as_failed) {
    enqueue([this] {
      std::string id = run_id();
      if (!id.empty()) client_.update_run(id, "FAILED", now_ms());
    });
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void RunLogger::enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  changed_.notify_all();
}

void RunLogger::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    run_task(task);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    changed_.notify_all();
  }
}

void RunLogger::run_task(const std::function<void()>& task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (unavailable_) {
      ++dropped_;
      return;
    }
  }
  try {
    task();
    std::lock_guard<std::mutex> lock(mutex_);
    server_answered_ = true;
  } catch (const RequestError& error) {
    if (error.server_unavailable()) {
      std::lock_guard<std::mutex> lock(mutex_);
      unavailable_ = true;
    }
    if (reports_.warning)
      reports_.warning(std::string(error.what()) +
                       (error.server_unavailable()
                            ? "; no longer reporting to MLflow (training goes on)"
                            : "; those values were not logged (training goes on)"));
  } catch (const std::exception& error) {
    // A run that could not be opened (a deleted experiment, an unexpected answer): nothing
    // after it can be logged either.
    {
      std::lock_guard<std::mutex> lock(mutex_);
      unavailable_ = true;
    }
    if (reports_.warning)
      reports_.warning(std::string(error.what()) +
                       "; no longer reporting to MLflow (training goes on)");
  }
}

void RunLogger::open_run(const RunSpec& spec) {
  std::string id;
  if (spec.resume_run_id) {
    // mlflow.start_run(run_id=...): the run must exist; it is marked RUNNING again.
    const nlohmann::json run = client_.get_run(*spec.resume_run_id);
    id = run.at("info").at("run_id").get<std::string>();
    client_.update_run(id, "RUNNING", 0);
  } else {
    std::string experiment = spec.experiment_id.value_or("0");
    if (spec.experiment_name) experiment = client_.experiment_id_for_name(*spec.experiment_name);
    KeyValues tags = spec.tags;
    if (spec.parent_run_id) tags.emplace_back("mlflow.parentRunId", *spec.parent_run_id);
    id = client_.create_run(experiment, spec.run_name, now_ms(), tags);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    run_id_ = id;
  }
  if (reports_.info)
    reports_.info("MLflow run " + id + (spec.resume_run_id ? " (resumed)" : "") + " at " +
                  client_.options().tracking_uri);
  // A resumed run's tags go with the params (a new run got them at creation).
  client_.log_batch(id, {}, spec.params, spec.resume_run_id ? spec.tags : KeyValues{});
}

void RunLogger::start(RunSpec spec) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    started_ = true;
  }
  enqueue([this, spec = std::move(spec)] {
    try {
      open_run(spec);
    } catch (const RequestError& error) {
      // Without a run (an unknown MLFLOW_RUN_ID, a refused creation) nothing can be logged:
      // reported as a run that could not be opened, which ends the reporting.
      if (run_id().empty() && !error.server_unavailable()) throw std::runtime_error(error.what());
      throw;
    }
  });
}

void RunLogger::log_metrics(std::vector<Metric> metrics) {
  enqueue([this, metrics = std::move(metrics)] {
    const std::string id = run_id();
    if (!id.empty()) client_.log_batch(id, metrics, {}, {});
  });
}

void RunLogger::finish(const std::string& status) {
  enqueue([this, status] {
    const std::string id = run_id();
    if (id.empty()) return;
    client_.update_run(id, status, now_ms());
  });
  double patience = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finish_called_ = true;
    // A server that answered before may be having a blip: give the queue a while. One that
    // never answered is not waited for (its first request may still be in its retries).
    if (server_answered_) patience = std::min(patience_seconds_, kFinishPatienceSeconds);
  }
  flush(patience);
}

void RunLogger::flush(double patience_seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto idle = [this] { return queue_.empty() && !busy_; };
  if (!changed_.wait_for(lock, std::chrono::duration<double>(patience_seconds), idle)) {
    client_.stop_retrying();
    changed_.wait(lock, idle);
  }
  if (dropped_ > 0 && reports_.warning)
    reports_.warning("MLflow: " + std::to_string(dropped_) +
                     " logging call(s) were dropped because the tracking server was unavailable");
  dropped_ = 0;
}

std::string RunLogger::run_id() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return run_id_;
}

int RunLogger::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

}  // namespace ctrainer::mlflow
