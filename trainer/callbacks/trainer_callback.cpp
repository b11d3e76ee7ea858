#include <ctrainer/trainer/callbacks/trainer_callback.h>

#include <ctrainer/core/errors.h>

namespace ctrainer {

void CallbackHandler::add(std::shared_ptr<TrainerCallback> callback) {
  if (!callback) throw ArgumentError("add_callback: the callback is null");
  callbacks_.push_back(std::move(callback));
}

std::shared_ptr<TrainerCallback> CallbackHandler::pop(const std::string& name) {
  for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
    if ((*it)->name() == name) {
      auto cb = *it;
      callbacks_.erase(it);
      return cb;
    }
  }
  return nullptr;
}

}  // namespace ctrainer
