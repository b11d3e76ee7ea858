#include <ctrainer/trainer/checkpoint/loop_state.h>

#include <ctrainer/trainer/runtime/logging.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

constexpr int kLoopStateVersion = 1;

}  // namespace

nlohmann::json LoopState::to_json() const {
  return {
      {"format_version", kLoopStateVersion},
      {"tr_loss", tr_loss},
      {"tr_loss_by_rank", tr_loss_by_rank},
      {"total_loss_scalar", total_loss_scalar},
      {"globalstep_last_logged", globalstep_last_logged},
      {"epoch_index", position.epoch},
      {"batches_consumed_in_epoch", position.batches_consumed},
      {"world_size", shape.world_size},
      {"per_device_train_batch_size", shape.per_device_train_batch_size},
      {"gradient_accumulation_steps", shape.gradient_accumulation_steps},
      {"train_dataset_size", shape.train_dataset_size},
  };
}

LoopState LoopState::from_json(const nlohmann::json& json, const std::string& folder) {
  // Every problem names the file and the key, never a JSON library error or a cast of 1e300.
  const std::string file = folder + "/loop_state.json";
  if (!json.is_object()) throw std::runtime_error(file + " is not a JSON object");
  const auto member = [&](const char* key) -> const nlohmann::json& {
    const auto it = json.find(key);
    if (it == json.end()) throw std::runtime_error(file + " lacks \"" + key + "\"");
    return *it;
  };
  const auto as_number = [&](const nlohmann::json& value, const std::string& key) {
    if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();  // to_json()'s NaN
    if (!value.is_number())
      throw std::runtime_error(file + ": \"" + key + "\" must be a number, got " +
                               value.dump().substr(0, 80));
    return value.get<double>();
  };
  const auto number = [&](const char* key) { return as_number(member(key), key); };
  // Counters and sizes: integers from `min` up (the largest leaves room to count on).
  const auto integer = [&](const char* key, int64_t min) {
    const nlohmann::json& value = member(key);
    constexpr int64_t kMax = int64_t{1} << 53;
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<uint64_t>() > kMax) ||
        value.get<int64_t>() < min || value.get<int64_t>() > kMax)
      throw std::runtime_error(file + ": \"" + key + "\" must be an integer in [" +
                               std::to_string(min) + ", 2^53], got " + value.dump().substr(0, 80));
    return value.get<int64_t>();
  };
  if (json.value("format_version", nlohmann::json()) != kLoopStateVersion)
    throw std::runtime_error(folder + ": unsupported loop_state.json format_version " +
                             json.value("format_version", nlohmann::json()).dump());
  LoopState state;
  state.tr_loss = number("tr_loss");
  state.total_loss_scalar = number("total_loss_scalar");
  state.globalstep_last_logged = integer("globalstep_last_logged", 0);
  state.position = {integer("epoch_index", 0), integer("batches_consumed_in_epoch", 0)};
  state.shape = {integer("world_size", 1), integer("per_device_train_batch_size", 1),
                 integer("gradient_accumulation_steps", 1), integer("train_dataset_size", 0)};
  if (const auto it = json.find("tr_loss_by_rank"); it != json.end()) {
    if (!it->is_array() ||
        (!it->empty() && static_cast<int64_t>(it->size()) != state.shape.world_size))
      throw std::runtime_error(file + ": \"tr_loss_by_rank\" must be a list of world_size (" +
                               std::to_string(state.shape.world_size) + ") numbers, got " +
                               it->dump().substr(0, 80));
    for (size_t rank = 0; rank < it->size(); ++rank)
      state.tr_loss_by_rank.push_back(
          as_number((*it)[rank], "tr_loss_by_rank[" + std::to_string(rank) + "]"));
  }
  return state;
}

bool LoopState::same_global_batch(const LoopShape& now) const {
  // (The saved sizes come from a file: a product that overflows is no global batch of a run.)
  int64_t saved_batch = 0, batch = 0;
  const bool overflow =
      __builtin_mul_overflow(shape.world_size, shape.per_device_train_batch_size, &saved_batch) ||
      __builtin_mul_overflow(now.world_size, now.per_device_train_batch_size, &batch);
  return !overflow && saved_batch == batch;
}

void LoopState::require_resumable_by(const LoopShape& now, const std::string& folder) const {
  auto expect_same = [&](int64_t saved, int64_t current, const std::string& flag,
                         const std::string& hint) {
    if (saved != current)
      throw ArgumentError(
          "--resume_from_checkpoint " + folder + ": the checkpoint was written with " + flag + " " +
          std::to_string(saved) + " but this run uses " + std::to_string(current) + "; " + hint);
  };
  const std::string same_value =
      "resume with the same value (the data order and the optimizer steps depend on it)";
  // Another world size is fine (a sharded checkpoint re-cuts its state for any world size).
  // With the same global batch the samplers hand out the same examples per optimizer step,
  // only split differently between the ranks; with another one (an elastic job that lost or
  // gained a node runs the same command on another number of processes) resume_position
  // continues as transformers does.
  if (shape.world_size != now.world_size && same_global_batch(now)) {
    logging::logger()->info(
        "{}: written by {} processes x {} examples, resumed by {} x {}: the same global batch",
        folder, shape.world_size, shape.per_device_train_batch_size, now.world_size,
        now.per_device_train_batch_size);
  } else {
    expect_same(shape.per_device_train_batch_size, now.per_device_train_batch_size,
                "--per_device_train_batch_size",
                shape.world_size == now.world_size
                    ? same_value
                    : "resume with the same value, or with one that keeps the global batch of " +
                          std::to_string(shape.world_size) + " x " +
                          std::to_string(shape.per_device_train_batch_size) + " examples");
  }
  expect_same(shape.gradient_accumulation_steps, now.gradient_accumulation_steps,
              "--gradient_accumulation_steps", same_value);
  expect_same(shape.train_dataset_size, now.train_dataset_size, "a train dataset of size",
              same_value);
}

DataPosition LoopState::resume_position(const LoopShape& now, int64_t batches_per_epoch,
                                        int64_t global_step, bool ignore_data_skip,
                                        const std::string& folder) const {
  DataPosition next = position;
  if (!same_global_batch(now)) {
    // transformers' _init_training_state: the position is recomputed from global_step in this
    // run's own updates per epoch. The saved run's batches were larger or smaller, so the
    // resumed epoch re-reads or skips some examples; the optimizer steps and the schedule go on
    // from global_step.
    const int64_t gas = now.gradient_accumulation_steps;
    const int64_t updates_per_epoch =
        std::max<int64_t>((batches_per_epoch + gas - 1) / gas, int64_t{1});
    next.epoch = global_step / updates_per_epoch;
    next.batches_consumed = (global_step % updates_per_epoch) * gas;
    logging::logger()->warn(
        "{}: written by {} processes x {} examples x {} accumulation steps, resumed by {} x {} "
        "x {}: the global batch changes from {} to {} examples per optimizer step. As "
        "transformers does, the run goes on from global step {} at epoch {}, batch {} of this "
        "run's {} batches per epoch",
        folder, shape.world_size, shape.per_device_train_batch_size,
        shape.gradient_accumulation_steps, now.world_size, now.per_device_train_batch_size, gas,
        shape.world_size * shape.per_device_train_batch_size * shape.gradient_accumulation_steps,
        now.world_size * now.per_device_train_batch_size * gas, global_step, next.epoch,
        next.batches_consumed, batches_per_epoch);
  } else if (next.batches_consumed >= batches_per_epoch) {  // saved at the end of an epoch
    next.epoch += 1;
    next.batches_consumed = 0;
  }
  if (ignore_data_skip) next.batches_consumed = 0;  // HF: restart the epoch's data
  if (next.batches_consumed % shape.gradient_accumulation_steps != 0)
    throw std::runtime_error(folder + ": saved inside an accumulation window (batch " +
                             std::to_string(next.batches_consumed) + "); cannot resume exactly");
  return next;
}

}  // namespace ctrainer
