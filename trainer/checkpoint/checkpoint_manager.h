#pragma once
/// \file CheckpointManager: the one owner of output_dir/checkpoint-<step> folders. It saves them
/// (collectively across processes, atomically, with HF's rotation), finds and validates the one to
/// resume from, and loads it back into the run's objects. The files are described in
/// docs/checkpoint-format.md; the folder mechanics (manifest, atomic rename, rotation rule) are in
/// checkpoint_dir.h.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/distributed/process_info.h>
#include <ctrainer/trainer/checkpoint/loop_state.h>
#include <ctrainer/trainer/trainer_state.h>

namespace torch::optim {
class Optimizer;
}

namespace ctrainer {

class GradScaler;
class LRScheduler;
class Model;
class Strategy;
struct SamplerState;
struct TrainingArguments;

/// The run's objects a checkpoint saves and restores (owned by the caller).
struct CheckpointParts {
  Model* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  LRScheduler* lr_scheduler = nullptr;
  /// Null when the run does not scale the loss.
  GradScaler* grad_scaler = nullptr;
};

/// What a resumable checkpoint gives back besides the restored parts.
struct LoadedCheckpoint {
  /// trainer_state.json as saved (the caller keeps its own schedule settings; see
  /// TrainerState::continue_from).
  TrainerState state;
  LoopState loop;
  /// Where the data continues (LoopState::resume_position).
  DataPosition position;
};

class CheckpointManager {
 public:
  /// `strategy` provides the barriers of a multi-process save; all three must outlive this.
  CheckpointManager(const TrainingArguments& args, const ProcessInfo& process, Strategy& strategy);

  /// Writes output_dir/checkpoint-<state.global_step>; collective: every process calls it.
  /// Each process captures its RNG streams (with `sampler`, where its data sampler stands);
  /// processes other than 0 stage their files next to the folder, then process 0 writes the
  /// shared files (weights and config.json via save_pretrained, optimizer, scheduler, scaler,
  /// loop and trainer state, arguments), moves the staged ones in, commits the folder atomically
  /// and rotates old checkpoints (save_total_limit, never state.best_model_checkpoint). With
  /// save_only_model only the weights, config and states are written. Returns the folder.
  std::filesystem::path save(const CheckpointParts& parts, const TrainerState& state,
                             const LoopState& loop, const SamplerState& sampler);

  /// Whether checkpoint-<step> exists and is complete (its manifest verifies).
  bool has_complete(int64_t step) const;

  /// HF's --resume_from_checkpoint: a folder (it must verify), or true/latest for the newest
  /// complete checkpoint in output_dir (incomplete newer ones are skipped with a warning). latest
  /// without any checkpoint starts from scratch (nothing); true without one, a missing folder or
  /// a corrupted one throw ArgumentError naming the flag.
  std::optional<std::filesystem::path> resume_checkpoint() const;

  /// Restores weights (every key and shape must match), optimizer, scheduler and loss scale from
  /// a resumable checkpoint, after checking that it was written by a run of the same `shape`.
  /// `batches_per_epoch` of this run places the data position. RNG streams are restored
  /// separately by restore_rng, as the last thing before the first step.
  LoadedCheckpoint load(const std::filesystem::path& folder, const CheckpointParts& parts,
                        const LoopShape& shape, int64_t batches_per_epoch) const;

  /// Restores this process's RNG streams from `folder`.
  void restore_rng(const std::filesystem::path& folder) const;

  /// HF's load_best_model_at_end: copies the weights of state.best_model_checkpoint into `model`
  /// when there is one and it verifies (else warns and keeps the model). Returns whether it
  /// loaded.
  bool load_best_model(const TrainerState& state, Model& model) const;

 private:
  /// rng_state.json for one process, rng_state_<rank>.json with several (HF's names).
  std::string rng_file(int64_t rank) const;
  void write_shared_files(const std::filesystem::path& dir, const CheckpointParts& parts,
                          const TrainerState& state, const LoopState& loop,
                          const nlohmann::json& rng, const std::filesystem::path& staging) const;

  const TrainingArguments& args_;
  const ProcessInfo& process_;
  Strategy& strategy_;
};

}  // namespace ctrainer
