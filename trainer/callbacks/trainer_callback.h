#pragma once
/// \file TrainerCallback (every HF event, no-op by default) and the CallbackHandler that calls
/// them in order.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/trainer_state.h>

namespace torch::optim {
class Optimizer;
}

namespace ctrainer {

class Model;
class LRScheduler;
class DataLoader;

/// Metrics of an evaluation / prediction ("eval_loss", "eval_accuracy", ...).
using Metrics = std::map<std::string, double>;

/// What HF passes as **kwargs: the objects of the run (null when not available at that event).
struct CallbackContext {
  Model* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  LRScheduler* lr_scheduler = nullptr;
  const DataLoader* train_dataloader = nullptr;
  const DataLoader* eval_dataloader = nullptr;
  /// on_evaluate / on_predict: the metrics just computed.
  const Metrics* metrics = nullptr;
  /// on_log: the dict being logged.
  const nlohmann::json* logs = nullptr;
};

/// Base class of callbacks: override the events you need. The arguments are those of the run;
/// `control` may be modified to steer the loop (stop, log, evaluate, save).
class TrainerCallback {
 public:
  virtual ~TrainerCallback() = default;
  /// A stable name (used for removal and for stateful_callbacks in checkpoints).
  virtual std::string name() const = 0;
  /// Restores what the callback stored in state.stateful_callbacks[name()] (HF's
  /// ExportableState) when training resumes from a checkpoint. Stateless callbacks ignore it.
  virtual void restore_state(const nlohmann::json& saved) { (void)saved; }

  using Args = const TrainingArguments&;
  using Ctx = const CallbackContext&;
  virtual void on_init_end(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_train_begin(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_train_end(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_epoch_begin(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_epoch_end(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_step_begin(Args, TrainerState&, TrainerControl&, Ctx) {}
  /// After gradient clipping, before optimizer.step().
  virtual void on_pre_optimizer_step(Args, TrainerState&, TrainerControl&, Ctx) {}
  /// After optimizer.step(), before the gradients are zeroed.
  virtual void on_optimizer_step(Args, TrainerState&, TrainerControl&, Ctx) {}
  /// After a micro-batch that did not end a gradient-accumulation window.
  virtual void on_substep_end(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_step_end(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_evaluate(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_predict(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_save(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_log(Args, TrainerState&, TrainerControl&, Ctx) {}
  virtual void on_prediction_step(Args, TrainerState&, TrainerControl&, Ctx) {}
};

/// Calls the registered callbacks in registration order for each event.
class CallbackHandler {
 public:
  void add(std::shared_ptr<TrainerCallback> callback);
  /// Removes and returns the first callback called `name` (null if none).
  std::shared_ptr<TrainerCallback> pop(const std::string& name);
  const std::vector<std::shared_ptr<TrainerCallback>>& callbacks() const { return callbacks_; }

  /// Calls `event` on every callback, e.g. call(&TrainerCallback::on_log, ...).
  template <typename Event>
  void call(Event event, const TrainingArguments& args, TrainerState& state,
            TrainerControl& control, const CallbackContext& ctx) const {
    for (const auto& cb : callbacks_) ((*cb).*event)(args, state, control, ctx);
  }

 private:
  std::vector<std::shared_ptr<TrainerCallback>> callbacks_;
};

}  // namespace ctrainer
