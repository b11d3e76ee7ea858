#include <ctrainer/trainer/checkpoint/checkpoint_manager.h>

#include <algorithm>
#include <cctype>

#include <torch/optim/optimizer.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/distributed/sharded_state.h>
#include <ctrainer/distributed/strategy.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/model.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>
#include <ctrainer/trainer/checkpoint/optimizer_state.h>
#include <ctrainer/trainer/checkpoint/rng_state.h>
#include <ctrainer/trainer/data/sampler.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>
#include <ctrainer/trainer/precision/grad_scaler.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer {
namespace fs = std::filesystem;
namespace {

constexpr const char* kOptimizerTensors = "optimizer.safetensors";
constexpr const char* kOptimizerMeta = "optimizer.json";
constexpr const char* kSchedulerFile = "scheduler.json";
constexpr const char* kScalerFile = "scaler.json";
constexpr const char* kTrainerStateFile = "trainer_state.json";
constexpr const char* kTrainingArgsFile = "training_args.json";
constexpr const char* kLoopStateFile = "loop_state.json";
constexpr const char* kCheckpointFile = "checkpoint file";

nlohmann::json read_checkpoint_json(const fs::path& path) {
  return read_json_file(path, kCheckpointFile);
}

/// `what`, led by the state file it is about unless it names that file and its checkpoint already.
std::string in_state_file(const fs::path& file, const std::string& what) {
  const bool named = what.find(file.string()) != std::string::npos ||
                     (what.find(file.parent_path().string()) != std::string::npos &&
                      what.find(file.filename().string()) != std::string::npos);
  return named ? what : file.string() + ": " + what;
}

/// Reads state file `file` and hands it to `parse`. The JSON was read whole, so whatever the
/// parser (which knows the JSON, not where it came from) refuses is the file's content: a bad
/// input, rethrown as an ArgumentError (exit 2) naming the file, and with it the checkpoint.
template <class Parse>
decltype(auto) parse_state_file(const fs::path& file, Parse&& parse) {
  const nlohmann::json json = read_checkpoint_json(file);
  try {
    return parse(json);
  } catch (const nlohmann::json::exception& e) {  // a key of the wrong type, read unchecked
    throw ArgumentError(in_state_file(file, e.what()));
  } catch (const std::runtime_error& e) {  // ArgumentError included
    throw ArgumentError(in_state_file(file, e.what()));
  }
}

/// Resuming must continue the saved run exactly: every weight present, nothing extra.
WeightLoadOptions exact_weights() {
  WeightLoadOptions options;
  options.strict = true;
  return options;
}

void load_weights(Model& model, const fs::path& folder) {
  // The folder, not its model.safetensors: a model past save_pretrained's shard size is saved as
  // shards and an index.
  load_pretrained_weights(model, folder.string(), exact_weights());
}

}  // namespace

CheckpointManager::CheckpointManager(const TrainingArguments& args, const ProcessInfo& process,
                                     Strategy& strategy)
    : args_(args), process_(process), strategy_(strategy) {}

std::string CheckpointManager::rng_file(int64_t rank) const {
  return process_.world_size == 1 ? "rng_state.json"
                                  : "rng_state_" + std::to_string(rank) + ".json";
}

/// Keeps a model's full parameters gathered for one scope (ZeRO-3; a no-op otherwise).
class FullParameters {
 public:
  FullParameters(Strategy& strategy, Model& model) : strategy_(strategy), model_(model) {
    strategy_.gather_full_parameters(model_);
  }
  ~FullParameters() { strategy_.release_full_parameters(model_, changed_); }
  /// The full values were overwritten: the shards take them over on release.
  void mark_changed() { changed_ = true; }

 private:
  Strategy& strategy_;
  Model& model_;
  bool changed_ = false;
};

// ---- saving ------------------------------------------------------------------------------------

fs::path CheckpointManager::save(const CheckpointParts& parts, const TrainerState& state,
                                 const LoopState& loop, const SamplerState& sampler) {
  const int64_t step = state.global_step;
  const fs::path folder = checkpoint_path(args_.output_dir, step);
  // This process's RNG streams and where its sampler stands.
  nlohmann::json rng_json;
  if (!args_.save_only_model) {
    RngState rng = capture_rng_state();
    rng.sampler = sampler.to_json();
    rng_json = rng_state_to_json(rng);
  }
  const bool distributed = strategy_.world_size() > 1;
  // Rank 0 writes the full weights (model.safetensors stays an HF model folder); ZeRO-3 gathers
  // them on every rank for that. Each rank's sharded optimizer state is its own file.
  FullParameters full(strategy_, *parts.model);
  // Several processes: the others stage their RNG files next to the checkpoint, then process 0
  // alone writes the shared files, moves the staged ones in and commits the folder (a shared
  // file system, as HF assumes). Barriers keep every process out of the folder until it is
  // complete.
  const fs::path staging =
      fs::path(args_.output_dir) / (".rank-files-" + folder.filename().string());
  if (distributed && !process_.is_world_process_zero()) {
    if (!args_.save_only_model) {
      fs::create_directories(staging);
      write_json_file(staging / rng_file(process_.rank), rng_json);
      strategy_.save_sharded_state(*parts.optimizer, staging);  // if it shards the state
    }
    strategy_.barrier();  // staged
    strategy_.barrier();  // committed by process 0
    return folder;
  }
  if (distributed) strategy_.barrier();  // every process staged its files

  for (const auto& line : clean_stale_checkpoint_temporaries(args_.output_dir, step))
    logging::logger()->warn("{}", line);
  try {
    write_checkpoint_atomically(args_.output_dir, step, [&](const fs::path& dir) {
      write_shared_files(dir, parts, state, loop, rng_json, staging);
    });
  } catch (const std::exception& error) {
    // Nothing of the failed save is kept (write_checkpoint_atomically removed its temporary
    // folder); say which checkpoint a restart resumes from.
    const auto previous = latest_complete_checkpoint(args_.output_dir);
    throw std::runtime_error(
        "could not save " + folder.string() + ": " + error.what() + ". Nothing of it was kept; " +
        (previous ? "the last complete checkpoint, " + previous->string() + ", is unchanged"
                  : std::string("there is no earlier checkpoint")));
  }
  if (distributed) fs::remove_all(staging);
  logging::logger()->info("Saved checkpoint {}", folder.string());
  if (args_.save_total_limit) {
    std::optional<fs::path> best;
    if (state.best_model_checkpoint) best = fs::path(*state.best_model_checkpoint);
    for (const auto& deleted : rotate_checkpoints(args_.output_dir, *args_.save_total_limit, best))
      logging::logger()->info("Deleting older checkpoint {} due to save_total_limit",
                              deleted.string());
  }
  if (distributed) strategy_.barrier();  // committed: the others may read it now
  return folder;
}

void CheckpointManager::write_shared_files(const fs::path& dir, const CheckpointParts& parts,
                                           const TrainerState& state, const LoopState& loop,
                                           const nlohmann::json& rng,
                                           const fs::path& staging) const {
  // The weights as a loadable HF model folder: model.safetensors + config.json.
  save_pretrained(*parts.model, dir.string());
  if (!args_.save_only_model) {
    if (strategy_.shards_optimizer_state()) {
      strategy_.save_sharded_state(*parts.optimizer, dir);
      for (const fs::path& name : strategy_.sharded_state_files_of_other_processes()) {
        if (!fs::exists(staging / name))
          throw std::runtime_error("a process did not stage " + (staging / name).string() +
                                   "; every rank must see the same --output_dir (a shared "
                                   "file system)");
        fs::rename(staging / name, dir / name);
      }
    } else {
      OptimizerStateDict optimizer = optimizer_state_dict(*parts.optimizer);
      save_safetensors((dir / kOptimizerTensors).string(), optimizer.tensors, {{"format", "pt"}});
      write_json_file(dir / kOptimizerMeta, optimizer.meta);
    }
    write_json_file(dir / kSchedulerFile, parts.lr_scheduler->state_dict());
    if (parts.grad_scaler) write_json_file(dir / kScalerFile, parts.grad_scaler->state_dict());
    write_json_file(dir / rng_file(process_.rank), rng);
    for (int64_t rank = 1; strategy_.world_size() > 1 && rank < process_.world_size; ++rank) {
      const fs::path staged = staging / rng_file(rank);
      if (!fs::exists(staged))
        throw std::runtime_error("rank " + std::to_string(rank) + " did not stage " +
                                 staged.string() +
                                 "; every rank must see the same --output_dir (a shared file "
                                 "system)");
      fs::rename(staged, dir / rng_file(rank));
    }
    write_json_file(dir / kLoopStateFile, loop.to_json());
  }
  write_json_file(dir / kTrainerStateFile, state.to_json());
  write_json_file(dir / kTrainingArgsFile, to_json(args_));
}

bool CheckpointManager::has_complete(int64_t step) const {
  const fs::path folder = checkpoint_path(args_.output_dir, step);
  return fs::exists(folder) && !verify_checkpoint(folder);
}

// ---- resuming ----------------------------------------------------------------------------------

std::optional<fs::path> CheckpointManager::resume_checkpoint() const {
  if (!args_.resume_from_checkpoint) return std::nullopt;
  const std::string& value = *args_.resume_from_checkpoint;
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (lower == "false") return std::nullopt;
  if (lower == "true" || lower == "latest") {
    auto latest =
        latest_complete_checkpoint(args_.output_dir, [](const fs::path& p, const std::string& why) {
          logging::logger()->warn("skipping incomplete or corrupted checkpoint {}: {}", p.string(),
                                  why);
        });
    if (latest) return latest;
    // HF's `true` insists on a checkpoint. `latest` is for commands that are re-run as they are
    // (ctrainer-run --max-restarts, a preempted job's resubmission): the first attempt has
    // nothing to resume and starts from scratch.
    if (lower == "latest") {
      logging::logger()->warn(
          "--resume_from_checkpoint latest: no complete checkpoint in --output_dir {} yet; "
          "training starts from scratch",
          args_.output_dir);
      return std::nullopt;
    }
    throw ArgumentError("--resume_from_checkpoint " + value +
                        ": no complete checkpoint in --output_dir " + args_.output_dir +
                        " (use `latest` to start from scratch when there is none)");
  }
  if (!fs::is_directory(value))
    throw ArgumentError("--resume_from_checkpoint " + value + ": no such checkpoint folder");
  if (auto problem = verify_checkpoint(value))
    throw ArgumentError("--resume_from_checkpoint " + value + ": " + *problem);
  return fs::path(value);
}

LoadedCheckpoint CheckpointManager::load(const fs::path& dir, const CheckpointParts& parts,
                                         const LoopShape& shape, int64_t batches_per_epoch) const {
  const std::string folder = dir.string();
  const bool sharded_checkpoint = has_sharded_state(dir);
  if (!fs::exists(dir / kLoopStateFile) ||
      (!fs::exists(dir / kOptimizerTensors) && !sharded_checkpoint))
    throw ArgumentError("--resume_from_checkpoint " + folder +
                        ": this checkpoint holds only the model (save_only_model); it can "
                        "initialise a new run but training cannot resume from it");
  LoadedCheckpoint loaded;
  loaded.loop = parse_state_file(dir / kLoopStateFile, [&](const nlohmann::json& j) {
    return LoopState::from_json(j, folder);
  });
  loaded.loop.require_resumable_by(shape, folder);

  const bool sharded = strategy_.shards_optimizer_state();
  if (sharded_checkpoint != sharded)
    throw ArgumentError(
        "--resume_from_checkpoint " + folder + ": the checkpoint was written by a " +
        (sharded_checkpoint ? "sharded (--fsdp / --deepspeed ZeRO)" : "DDP or one-process") +
        " run and this run is " + (sharded ? "sharded" : "not") +
        "; resume with the checkpoint's kind of run (the model.safetensors inside can "
        "initialise any run as --model_name_or_path)");
  if (sharded) {
    // The masters carry the weights; any world size and stage can read them.
    strategy_.load_sharded_state(*parts.optimizer, dir);
  } else {
    load_weights(*parts.model, dir);
    OptimizerStateDict optimizer;
    optimizer.tensors = load_safetensors((dir / kOptimizerTensors).string()).tensors;
    parse_state_file(dir / kOptimizerMeta, [&](const nlohmann::json& meta) {
      optimizer.meta = meta;
      load_optimizer_state_dict(*parts.optimizer, optimizer);
    });
  }
  parse_state_file(dir / kSchedulerFile,
                   [&](const nlohmann::json& j) { parts.lr_scheduler->load_state_dict(j); });
  // HF: the scaler state is loaded when this run scales the loss and the checkpoint has it.
  const bool has_scaler_state = fs::exists(dir / kScalerFile);
  if (GradScaler* scaler = parts.grad_scaler) {
    if (has_scaler_state) {
      parse_state_file(dir / kScalerFile,
                       [&](const nlohmann::json& j) { scaler->load_state_dict(j); });
    } else {
      logging::logger()->warn(
          "{} has no {} (it was written without loss scaling); the loss scale starts afresh at {}",
          folder, kScalerFile, scaler->get_scale());
    }
  } else if (has_scaler_state) {
    logging::logger()->info("{}: {} ignored, this run does not scale the loss (no --fp16)", folder,
                            kScalerFile);
  }
  loaded.state = parse_state_file(
      dir / kTrainerStateFile, [](const nlohmann::json& j) { return TrainerState::from_json(j); });
  loaded.position = loaded.loop.resume_position(shape, batches_per_epoch, loaded.state.global_step,
                                                 args_.ignore_data_skip, folder);
  logging::logger()->info("Resuming from {}: global step {}, epoch {}, skipping {} batches", folder,
                          loaded.state.global_step, loaded.position.epoch,
                          loaded.position.batches_consumed);
  return loaded;
}

void CheckpointManager::restore_rng(const fs::path& folder) const {
  fs::path file = folder / rng_file(process_.rank);
  // Written by another number of processes (a sharded checkpoint resumes at any world size):
  // rank 0's file is rng_state.json alone and rng_state_0.json in company.
  if (!fs::exists(file) && process_.rank == 0)
    file = folder / (process_.world_size > 1 ? "rng_state.json" : "rng_state_0.json");
  if (!fs::exists(file) && process_.rank > 0) {
    // Resumed by more processes than wrote it (a sharded checkpoint at another world size).
    logging::logger()->warn(
        "{} has no {}: this rank did not exist when it was written; its random streams start "
        "from the seed",
        folder.string(), file.filename().string());
    return;
  }
  parse_state_file(file,
                   [](const nlohmann::json& j) { restore_rng_state(rng_state_from_json(j)); });
}

bool CheckpointManager::load_best_model(const TrainerState& state, Model& model) const {
  if (!state.best_model_checkpoint) return false;
  const fs::path best = *state.best_model_checkpoint;
  // The path comes from trainer_state.json: only a checkpoint folder of this run's output_dir is
  // loaded, never weights from wherever a (copied or edited) state file points.
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(best, ec);
  if (!checkpoint_step(best) || ec ||
      !fs::equivalent(resolved.parent_path(), args_.output_dir, ec)) {
    logging::logger()->warn(
        "the best checkpoint {} recorded in trainer_state.json is not a checkpoint-<step> folder "
        "of --output_dir {}: the best model is not loaded (paths read from files stay inside "
        "the run's folder)",
        best.string(), args_.output_dir);
    return false;
  }
  if (auto problem = verify_checkpoint(best)) {
    logging::logger()->warn("could not load the best model from {}: {}", best.string(), *problem);
    return false;
  }
  logging::logger()->info("Loading best model from {} (score: {}).", best.string(),
                          state.best_metric ? std::to_string(*state.best_metric) : "?");
  FullParameters full(strategy_, model);
  load_weights(model, best);
  full.mark_changed();
  return true;
}

}  // namespace ctrainer
