#include <ctrainer/trainer/trainer_state.h>

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
  out["best_model_checkpoint"] = best_model_checkpoint ? json(*best_model_checkpoint) : json(nullptr);
  out["is_local_process_zero"] = is_local_process_zero;
  out["is_world_process_zero"] = is_world_process_zero;
  out["stateful_callbacks"] = stateful_callbacks;
  return out;
}

}  // namespace ctrainer
