#pragma once
/// \file LoopState: the training loop's own progress in a checkpoint (loop_state.json): the
/// running loss sums HF keeps in memory, where the loop stands in the data, and the settings a
/// resumed run must share with the saved one for the data order and the steps to continue exactly.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ctrainer {

/// Where the loop stands in the data: the epoch index and the batches consumed in it.
struct DataPosition {
  int64_t epoch = 0;
  int64_t batches_consumed = 0;
};

/// The run's settings that fix the data order and the optimizer steps. A checkpoint resumes into
/// a run with the same ones, or with another world size (an elastic job that shrank or grew).
struct LoopShape {
  int64_t world_size = 1;
  int64_t per_device_train_batch_size = 0;
  int64_t gradient_accumulation_steps = 1;
  int64_t train_dataset_size = 0;
};

/// loop_state.json (format_version 1; docs/checkpoint-format.md).
struct LoopState {
  /// The mean over processes of the loss summed since the last logging step (HF tr_loss).
  double tr_loss = 0;
  /// Each process's own sum, by rank: what a resumed process restores, so that the next logged
  /// mean over processes is computed from the same floats as in the uninterrupted run (restoring
  /// the mean on every rank changes its last bits). Empty in checkpoints written before it was
  /// kept, or resumed on another number of processes: then every rank restores tr_loss.
  std::vector<double> tr_loss_by_rank;
  /// Loss of the steps already logged (HF _total_loss_scalar).
  double total_loss_scalar = 0;
  int64_t globalstep_last_logged = 0;
  DataPosition position;
  LoopShape shape;

  nlohmann::json to_json() const;
  /// Reads loop_state.json of the checkpoint `folder` (named in errors); refuses other format
  /// versions.
  static LoopState from_json(const nlohmann::json& json, const std::string& folder);

  /// Throws ArgumentError naming the flag when a run of shape `now` cannot resume this
  /// checkpoint: another --gradient_accumulation_steps or train set, or another
  /// --per_device_train_batch_size that does not keep the global batch. Another world size is
  /// accepted (torchrun's elastic restarts change it); resume_position says where such a run
  /// continues.
  void require_resumable_by(const LoopShape& now, const std::string& folder) const;

  /// True when `now` hands out the saved run's global batch (world size x per-device batch):
  /// every optimizer step then sees the same examples, only split otherwise between ranks.
  bool same_global_batch(const LoopShape& now) const;

  /// Where a run of shape `now` continues, with `batches_per_epoch` of its own batches per epoch
  /// and the checkpoint's `global_step`:
  /// - with the saved global batch: the next unseen batch (the next epoch when the checkpoint
  ///   ends one), exactly where the saved run would have gone on;
  /// - with another one (the world size changed): transformers' rule, epoch = global_step /
  ///   updates per epoch and (global_step % updates per epoch) x accumulation batches skipped,
  ///   both counted in this run's batches;
  /// - the epoch's start either way with `ignore_data_skip` (HF).
  /// Throws when the checkpoint was taken inside an accumulation window.
  DataPosition resume_position(const LoopShape& now, int64_t batches_per_epoch, int64_t global_step,
                               bool ignore_data_skip, const std::string& folder) const;
};

}  // namespace ctrainer
