#include <ctrainer/trainer/callbacks/early_stopping_callback.h>

#include <cmath>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer {

EarlyStoppingCallback::EarlyStoppingCallback(int64_t early_stopping_patience,
                                             double early_stopping_threshold)
    : patience_(early_stopping_patience), threshold_(early_stopping_threshold) {
  if (patience_ < 1)
    throw ArgumentError("EarlyStoppingCallback: early_stopping_patience must be >= 1");
  if (threshold_ < 0)
    throw ArgumentError("EarlyStoppingCallback: early_stopping_threshold must be >= 0");
}

void EarlyStoppingCallback::on_train_begin(Args args, TrainerState&, TrainerControl&, Ctx) {
  if (!args.metric_for_best_model)
    throw ArgumentError(
        "EarlyStoppingCallback requires --metric_for_best_model (e.g. --metric_for_best_model "
        "loss)");
  if (args.eval_strategy == IntervalStrategy::kNo)
    throw ArgumentError("EarlyStoppingCallback requires --eval_strategy steps or epoch");
}

void EarlyStoppingCallback::on_evaluate(Args args, TrainerState& state, TrainerControl& control,
                                        Ctx ctx) {
  std::string key = *args.metric_for_best_model;
  if (key.rfind("eval_", 0) != 0) key = "eval_" + key;
  if (ctx.metrics == nullptr || ctx.metrics->count(key) == 0) {
    logging::logger()->warn(
        "early stopping required metric_for_best_model, but did not find {} so early stopping is "
        "disabled",
        key);
    return;
  }
  const double value = ctx.metrics->at(key);
  const bool greater = args.greater_is_better.value_or(false);
  // Compared with the best value *before* this evaluation (the Trainer updates best_metric
  // after the on_evaluate callbacks ran), exactly as HF's check_metric_value.
  const bool improved =
      !state.best_metric || ((greater ? value > *state.best_metric : value < *state.best_metric) &&
                             std::abs(value - *state.best_metric) > threshold_);
  patience_counter_ = improved ? 0 : patience_counter_ + 1;
  if (patience_counter_ >= patience_) control.should_training_stop = true;
  state.stateful_callbacks[name()] = this->state();
}

void EarlyStoppingCallback::restore_state(const nlohmann::json& saved) {
  try {
    patience_counter_ = saved.at("attributes").at("early_stopping_patience_counter").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("checkpoint: bad EarlyStoppingCallback state: ") +
                             e.what());
  }
}

nlohmann::json EarlyStoppingCallback::state() const {
  return {
      {"args", {{"early_stopping_patience", patience_}, {"early_stopping_threshold", threshold_}}},
      {"attributes", {{"early_stopping_patience_counter", patience_counter_}}}};
}

}  // namespace ctrainer
