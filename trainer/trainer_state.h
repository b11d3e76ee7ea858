#pragma once
/// \file TrainerState (progress of a run, serialised as HF's trainer_state.json) and
/// TrainerControl (the flags callbacks set to steer the loop).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer {

/// The inner state of a run. One "step" is one optimizer update (k micro-batches with
/// gradient_accumulation_steps=k). Field names are HF's.
struct TrainerState {
  /// Fractional epoch (epoch + fraction of the current epoch done); unset before training.
  std::optional<double> epoch;
  int64_t global_step = 0;
  int64_t max_steps = 0;
  int64_t logging_steps = 500;
  int64_t eval_steps = 500;
  int64_t save_steps = 500;
  int64_t train_batch_size = 0;
  int64_t num_train_epochs = 0;
  double total_flos = 0;
  /// Input tokens of every rank so far (include_num_input_tokens_seen; 0 when it is "no").
  int64_t num_input_tokens_seen = 0;
  /// Every dict passed to Trainer::log, with "step" (and "epoch" while training) added.
  std::vector<nlohmann::json> log_history;
  std::optional<double> best_metric;
  std::optional<int64_t> best_global_step;
  std::optional<std::string> best_model_checkpoint;
  bool is_local_process_zero = true;
  bool is_world_process_zero = true;
  /// State of callbacks that persist across resume (EarlyStopping counters) and of the
  /// TrainerControl (as of the last checkpoint), by class name.
  nlohmann::json stateful_callbacks = nlohmann::json::object();

  /// HF trainer_state.json layout.
  nlohmann::json to_json() const;
  /// Reads trainer_state.json; throws std::runtime_error naming the field on bad content.
  static TrainerState from_json(const nlohmann::json& j);

  /// Resuming: takes the progress and history of `saved` (a checkpoint's state) but keeps this
  /// run's schedule settings (max_steps, num_train_epochs, logging/eval/save steps,
  /// train_batch_size) and this process's roles.
  void continue_from(TrainerState saved);
};

/// Flags that callbacks set and the training loop obeys (HF TrainerControl).
struct TrainerControl {
  bool should_training_stop = false;
  bool should_epoch_stop = false;
  bool should_save = false;
  bool should_evaluate = false;
  bool should_log = false;

  void new_training() { should_training_stop = false; }
  void new_epoch() { should_epoch_stop = false; }
  void new_step() { should_save = should_evaluate = should_log = false; }

  /// HF's TrainerControl.state(): {"args": {should_*...}, "attributes": {}}, the entry
  /// "TrainerControl" of TrainerState::stateful_callbacks.
  nlohmann::json state() const;
};

}  // namespace ctrainer
