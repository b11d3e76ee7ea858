#include <ctrainer/trainer/trainer_state.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace ctrainer {

nlohmann::json TrainerState::to_json() const {
  using nlohmann::json;
  json out;
  out["epoch"] = epoch ? json(*epoch) : json(nullptr);
  out["global_step"] = global_step;
  out["max_steps"] = max_steps;
  out["logging_steps"] = logging_steps;
  out["eval_steps"] = eval_steps;
  out["save_steps"] = save_steps;
  out["train_batch_size"] = train_batch_size;
  out["num_train_epochs"] = num_train_epochs;
  out["total_flos"] = total_flos;
  out["log_history"] = log_history;
  out["best_metric"] = best_metric ? json(*best_metric) : json(nullptr);
  out["best_global_step"] = best_global_step ? json(*best_global_step) : json(nullptr);
  out["best_model_checkpoint"] =
      best_model_checkpoint ? json(*best_model_checkpoint) : json(nullptr);
  out["is_local_process_zero"] = is_local_process_zero;
  out["is_world_process_zero"] = is_world_process_zero;
  out["stateful_callbacks"] = stateful_callbacks;
  out["num_input_tokens_seen"] = num_input_tokens_seen;
  // Fields of features ctrainer does not have (hyperparameter search), with HF's defaults, so
  // that the file has every key HF's TrainerState writes.
  out["is_hyper_param_search"] = false;
  out["trial_name"] = nullptr;
  out["trial_params"] = nullptr;
  return out;
}

nlohmann::json TrainerControl::state() const {
  return {{"args",
           {{"should_training_stop", should_training_stop},
            {"should_epoch_stop", should_epoch_stop},
            {"should_save", should_save},
            {"should_evaluate", should_evaluate},
            {"should_log", should_log}}},
          {"attributes", nlohmann::json::object()}};
}

namespace {

template <typename T>
void read_field(const nlohmann::json& j, const char* key, T& out) {
  if (!j.contains(key))
    throw std::runtime_error(std::string("trainer_state.json lacks \"") + key + "\"");
  // nlohmann converts any number to an integer with a cast, undefined for 1e300: counters must
  // be integers in range.
  if constexpr (std::is_same_v<T, int64_t>) {
    const nlohmann::json& value = j.at(key);
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() &&
         value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))
      throw std::runtime_error(std::string("trainer_state.json: bad \"") + key +
                               "\": must be an integer, got " + value.dump().substr(0, 80));
  }
  try {
    out = j.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("trainer_state.json: bad \"") + key + "\": " + e.what());
  }
}

template <typename T>
void read_optional(const nlohmann::json& j, const char* key, std::optional<T>& out) {
  out.reset();
  if (!j.contains(key) || j.at(key).is_null()) return;
  T value{};
  read_field(j, key, value);
  out = value;
}

}  // namespace

TrainerState TrainerState::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error("trainer_state.json is not a JSON object");
  TrainerState s;
  read_optional(j, "epoch", s.epoch);
  read_field(j, "global_step", s.global_step);
  read_field(j, "max_steps", s.max_steps);
  read_field(j, "logging_steps", s.logging_steps);
  read_field(j, "eval_steps", s.eval_steps);
  read_field(j, "save_steps", s.save_steps);
  read_field(j, "train_batch_size", s.train_batch_size);
  read_field(j, "num_train_epochs", s.num_train_epochs);
  read_field(j, "total_flos", s.total_flos);
  // Written by every transformers version and by ctrainer; a file without it counted nothing.
  if (j.contains("num_input_tokens_seen"))
    read_field(j, "num_input_tokens_seen", s.num_input_tokens_seen);
  read_field(j, "log_history", s.log_history);
  read_optional(j, "best_metric", s.best_metric);
  read_optional(j, "best_global_step", s.best_global_step);
  read_optional(j, "best_model_checkpoint", s.best_model_checkpoint);
  read_field(j, "is_local_process_zero", s.is_local_process_zero);
  read_field(j, "is_world_process_zero", s.is_world_process_zero);
  if (j.contains("stateful_callbacks")) s.stateful_callbacks = j.at("stateful_callbacks");
  return s;
}

void TrainerState::continue_from(TrainerState saved) {
  saved.max_steps = max_steps;
  saved.num_train_epochs = num_train_epochs;
  saved.logging_steps = logging_steps;
  saved.eval_steps = eval_steps;
  saved.save_steps = save_steps;
  saved.train_batch_size = train_batch_size;
  saved.is_local_process_zero = is_local_process_zero;
  saved.is_world_process_zero = is_world_process_zero;
  *this = std::move(saved);
}

}  // namespace ctrainer
