#include <ctrainer/trainer/checkpoint/loop_state.h>

#include <ctrainer/trainer/logging.h>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include <ctrainer/trainer/core/errors.h>

namespace ctrainer {
namespace {

constexpr int kLoopStateVersion = 1;

}  // namespace

nlohmann::json LoopState::to_json() const {
  return {
      {"format_version", kLoopStateVersion},
      {"tr_loss", tr_loss},
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
  if (json.value("format_version", 0) != kLoopStateVersion)
    throw std::runtime_error(folder + ": unsupported loop_state.json format_version " +
                             json.value("format_version", nlohmann::json()).dump());
  LoopState state;
  state.tr_loss = json.at("tr_loss").get<double>();
  state.total_loss_scalar = json.at("total_loss_scalar").get<double>();
  state.globalstep_last_logged = json.at("globalstep_last_logged").get<int64_t>();
  state.position = {json.at("epoch_index").get<int64_t>(),
                    json.at("batches_consumed_in_epoch").get<int64_t>()};
  state.shape = {json.at("world_size").get<int64_t>(),
                 json.at("per_device_train_batch_size").get<int64_t>(),
                 json.at("gradient_accumulation_steps").get<int64_t>(),
                 json.at("train_dataset_size").get<int64_t>()};
  return state;
}

void LoopState::require_same_shape(const LoopShape& now, const std::string& folder) const {
  auto expect_same = [&](int64_t saved, int64_t current, const std::string& flag) {
    if (saved != current)
      throw ArgumentError("--resume_from_checkpoint " + folder +
                          ": the checkpoint was written with " + flag + " " +
                          std::to_string(saved) + " but this run uses " + std::to_string(current) +
                          "; resume with the same value (the data order and the optimizer steps "
                          "depend on it)");
  };
  // Another world size is fine when every step still sees the same global batch (a sharded
  // checkpoint re-cuts its state for any world size): the samplers then hand out the same
  // examples per optimizer step, only split differently between the ranks.
  const int64_t saved_batch = shape.world_size * shape.per_device_train_batch_size;
  const int64_t batch = now.world_size * now.per_device_train_batch_size;
  if (shape.world_size != now.world_size && saved_batch == batch) {
    logging::logger()->info(
        "{}: written by {} processes x {} examples, resumed by {} x {}: the same global batch",
        folder, shape.world_size, shape.per_device_train_batch_size, now.world_size,
        now.per_device_train_batch_size);
  } else {
    expect_same(shape.world_size, now.world_size, "world size");
    expect_same(shape.per_device_train_batch_size, now.per_device_train_batch_size,
                "--per_device_train_batch_size");
  }
  expect_same(shape.gradient_accumulation_steps, now.gradient_accumulation_steps,
              "--gradient_accumulation_steps");
  expect_same(shape.train_dataset_size, now.train_dataset_size, "a train dataset of size");
}

DataPosition LoopState::resume_position(int64_t batches_per_epoch, bool ignore_data_skip,
                                        const std::string& folder) const {
  DataPosition next = position;
  if (next.batches_consumed >= batches_per_epoch) {  // saved at the end of an epoch
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
