// Trainer checkpoints: saving checkpoint-<step> folders and resuming from them exactly
// (docs/checkpoint-format.md describes the files).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>
#include <ctrainer/trainer/checkpoint/optimizer_state.h>
#include <ctrainer/trainer/checkpoint/rng_state.h>
#include <ctrainer/trainer/core/errors.h>
#include <ctrainer/trainer/logging.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>
#include <ctrainer/trainer/trainer.h>

namespace ctrainer {
namespace fs = std::filesystem;
namespace {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kConfigFile = "config.json";
constexpr const char* kOptimizerTensors = "optimizer.safetensors";
constexpr const char* kOptimizerMeta = "optimizer.json";
constexpr const char* kSchedulerFile = "scheduler.json";
constexpr const char* kScalerFile = "scaler.json";
constexpr const char* kTrainerStateFile = "trainer_state.json";
constexpr const char* kTrainingArgsFile = "training_args.json";
constexpr const char* kLoopStateFile = "loop_state.json";
constexpr int kLoopStateVersion = 1;

/// HF names: rng_state.json for a single process, rng_state_<rank>.json otherwise.
std::string rng_file(const ProcessInfo& p) {
  return p.world_size == 1 ? "rng_state.json" : "rng_state_" + std::to_string(p.rank) + ".json";
}

void write_json(const fs::path& path, const nlohmann::json& value) {
  std::ofstream out(path);
  out << value.dump(2) << '\n';
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + path.string() + " (disk full?)");
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("checkpoint file " + path.string() + " is missing or unreadable");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint file " + path.string() +
                             " is not valid JSON: " + e.what());
  }
}

/// Parameters and buffers by their hierarchical names (the HF state_dict keys).
std::map<std::string, at::Tensor> model_state(const Model& model) {
  std::map<std::string, at::Tensor> out;
  for (const auto& item : model.named_parameters(/*recurse=*/true))
    out[item.key()] = item.value().detach();
  for (const auto& item : model.named_buffers(/*recurse=*/true))
    out[item.key()] = item.value().detach();
  return out;
}

}  // namespace

// ---- saving ------------------------------------------------------------------------------------

std::string Trainer::save_checkpoint() {
  const int64_t step = state_.global_step;
  const fs::path folder = checkpoint_path(args_.output_dir, step);
  if (is_new_best_) {
    state_.best_model_checkpoint = folder.string();
    is_new_best_ = false;
  }
  // Collective: each rank sums its own losses; the checkpoint keeps their mean, which every rank
  // restores, so the logged mean over ranks continues exactly after a resume.
  const double tr_loss =
      tr_loss_.defined() ? strategy_->mean_across_processes(tr_loss_).item<double>() : 0.0;
  nlohmann::json loop = {
      {"format_version", kLoopStateVersion},
      {"tr_loss", tr_loss},
      {"total_loss_scalar", total_loss_scalar_},
      {"globalstep_last_logged", globalstep_last_logged_},
      {"epoch_index", position_.epoch},
      {"batches_consumed_in_epoch", position_.batches_consumed},
      {"world_size", strategy_->world_size()},
      {"per_device_train_batch_size", args_.per_device_train_batch_size},
      {"gradient_accumulation_steps", args_.gradient_accumulation_steps},
      {"train_dataset_size", train_dataloader_ ? train_dataloader_->dataset().size() : 0},
  };
  // This rank's RNG streams and where its sampler stands (position = batches consumed).
  nlohmann::json rng_json;
  if (!args_.save_only_model) {
    RngState rng = capture_rng_state();
    SamplerState sampler_state;
    if (train_dataloader_) sampler_state = train_dataloader_->state(position_.batches_consumed);
    sampler_state.epoch = position_.epoch;
    sampler_state.position = position_.batches_consumed;
    rng.sampler = sampler_state.to_json();
    rng_json = rng_state_to_json(rng);
  }
  const bool distributed = strategy_->world_size() > 1;
  // Several ranks: the others stage their RNG files next to the checkpoint, then rank 0 alone
  // writes the shared files, moves the staged ones in and commits the folder (a shared file
  // system, as HF assumes). Barriers keep every rank out of the folder until it is complete.
  const fs::path staging =
      fs::path(args_.output_dir) / (".rank-files-" + folder.filename().string());
  if (distributed && !process_.is_world_process_zero()) {
    if (!args_.save_only_model) {
      fs::create_directories(staging);
      write_json(staging / rng_file(process_), rng_json);
    }
    strategy_->barrier();  // staged
    strategy_->barrier();  // committed by rank 0
    control_.should_save = false;
    fire(&TrainerCallback::on_save);
    return folder.string();
  }
  if (distributed) strategy_->barrier();  // every rank staged its files

  write_checkpoint_atomically(args_.output_dir, step, [&](const fs::path& dir) {
    save_safetensors((dir / kModelFile).string(), model_state(*model_), {{"format", "pt"}});
    if (auto config = model_->config()) write_json(dir / kConfigFile, *config);
    if (!args_.save_only_model) {
      OptimizerStateDict opt = optimizer_state_dict(*optimizer_);
      save_safetensors((dir / kOptimizerTensors).string(), opt.tensors, {{"format", "pt"}});
      write_json(dir / kOptimizerMeta, opt.meta);
      write_json(dir / kSchedulerFile, lr_scheduler_->state_dict());
      if (const GradScaler* scaler = precision_->grad_scaler())
        write_json(dir / kScalerFile, scaler->state_dict());
      write_json(dir / rng_file(process_), rng_json);
      for (int64_t rank = 1; distributed && rank < process_.world_size; ++rank) {
        ProcessInfo other = process_;
        other.rank = rank;
        const fs::path staged = staging / rng_file(other);
        if (!fs::exists(staged))
          throw std::runtime_error("rank " + std::to_string(rank) + " did not stage " +
                                   staged.string() +
                                   "; every rank must see the same --output_dir (a shared file "
                                   "system)");
        fs::rename(staged, dir / rng_file(other));
      }
      write_json(dir / kLoopStateFile, loop);
    }
    // As HF: the control's flags at the moment of the save (should_save true, ...).
    state_.stateful_callbacks["TrainerControl"] = control_.state();
    write_json(dir / kTrainerStateFile, state_.to_json());
    write_json(dir / kTrainingArgsFile, to_json(args_));
  });
  if (distributed) fs::remove_all(staging);
  logging::logger()->info("Saved checkpoint {}", folder.string());
  if (args_.save_total_limit) {
    std::optional<fs::path> best;
    if (state_.best_model_checkpoint) best = fs::path(*state_.best_model_checkpoint);
    for (const auto& deleted : rotate_checkpoints(args_.output_dir, *args_.save_total_limit, best))
      logging::logger()->info("Deleting older checkpoint {} due to save_total_limit",
                              deleted.string());
  }
  if (distributed) strategy_->barrier();  // committed: the others may read it now
  control_.should_save = false;
  fire(&TrainerCallback::on_save);
  return folder.string();
}

// ---- resuming ----------------------------------------------------------------------------------

std::optional<std::string> Trainer::resolve_resume_checkpoint() const {
  if (!args_.resume_from_checkpoint) return std::nullopt;
  std::string value = *args_.resume_from_checkpoint;
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
    if (latest) return latest->string();
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
  return value;
}

void Trainer::load_model_weights(const std::string& folder) {
  const fs::path path = fs::path(folder) / kModelFile;
  SafetensorsFile file = load_safetensors(path.string());
  auto target = model_state(*model_);
  std::string missing, unexpected;
  for (const auto& [name, t] : target)
    if (!file.tensors.count(name)) missing += (missing.empty() ? "" : ", ") + name;
  for (const auto& [name, t] : file.tensors)
    if (!target.count(name)) unexpected += (unexpected.empty() ? "" : ", ") + name;
  if (!missing.empty() || !unexpected.empty())
    throw std::runtime_error(path.string() + " does not match the model: missing [" + missing +
                             "], unexpected [" + unexpected + "]");
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : target) {
    const at::Tensor& saved = file.tensors.at(name);
    if (saved.sizes() != t.sizes())
      throw std::runtime_error(path.string() + ": " + name + " has shape " +
                               c10::str(saved.sizes()) + " in the checkpoint but " +
                               c10::str(t.sizes()) + " in the model");
    t.copy_(saved);
  }
}

Trainer::DataPosition Trainer::load_checkpoint(const std::string& folder, int64_t steps_in_epoch) {
  const fs::path dir(folder);
  if (!fs::exists(dir / kLoopStateFile) || !fs::exists(dir / kOptimizerTensors))
    throw ArgumentError("--resume_from_checkpoint " + folder +
                        ": this checkpoint holds only the model (save_only_model); it can "
                        "initialise a new run but training cannot resume from it");
  const nlohmann::json loop = read_json(dir / kLoopStateFile);
  auto expect_same = [&](const char* key, int64_t now, const std::string& flag) {
    const int64_t saved = loop.at(key).get<int64_t>();
    if (saved != now)
      throw ArgumentError("--resume_from_checkpoint " + folder +
                          ": the checkpoint was written with " + flag + " " +
                          std::to_string(saved) + " but this run uses " + std::to_string(now) +
                          "; resume with the same value (the data order and the optimizer steps "
                          "depend on it)");
  };
  if (loop.value("format_version", 0) != kLoopStateVersion)
    throw std::runtime_error(folder + ": unsupported loop_state.json format_version " +
                             loop.value("format_version", nlohmann::json()).dump());
  expect_same("world_size", strategy_->world_size(), "world size");
  expect_same("per_device_train_batch_size", args_.per_device_train_batch_size,
              "--per_device_train_batch_size");
  expect_same("gradient_accumulation_steps", args_.gradient_accumulation_steps,
              "--gradient_accumulation_steps");
  expect_same("train_dataset_size", train_dataloader_->dataset().size(), "a train dataset of size");

  load_model_weights(folder);
  OptimizerStateDict opt;
  opt.tensors = load_safetensors((dir / kOptimizerTensors).string()).tensors;
  opt.meta = read_json(dir / kOptimizerMeta);
  load_optimizer_state_dict(*optimizer_, opt);
  lr_scheduler_->load_state_dict(read_json(dir / kSchedulerFile));
  // HF: the scaler state is loaded when this run scales the loss and the checkpoint has it.
  const bool has_scaler_state = fs::exists(dir / kScalerFile);
  if (GradScaler* scaler = precision_->grad_scaler()) {
    if (has_scaler_state) {
      const nlohmann::json state = read_json(dir / kScalerFile);
      try {
        scaler->load_state_dict(state);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error((dir / kScalerFile).string() + ": " + e.what());
      }
    } else {
      logging::logger()->warn(
          "{} has no {} (it was written without loss scaling); the loss scale starts afresh at {}",
          folder, kScalerFile, scaler->get_scale());
    }
  } else if (has_scaler_state) {
    logging::logger()->info("{}: {} ignored, this run does not scale the loss (no --fp16)", folder,
                            kScalerFile);
  }

  // Keep this run's schedule settings; take the history and progress from the checkpoint.
  TrainerState saved = TrainerState::from_json(read_json(dir / kTrainerStateFile));
  saved.max_steps = state_.max_steps;
  saved.num_train_epochs = state_.num_train_epochs;
  saved.logging_steps = state_.logging_steps;
  saved.eval_steps = state_.eval_steps;
  saved.save_steps = state_.save_steps;
  saved.train_batch_size = state_.train_batch_size;
  saved.is_local_process_zero = state_.is_local_process_zero;
  saved.is_world_process_zero = state_.is_world_process_zero;
  state_ = std::move(saved);
  for (const auto& cb : callbacks_.callbacks())
    if (state_.stateful_callbacks.contains(cb->name()))
      cb->restore_state(state_.stateful_callbacks.at(cb->name()));

  tr_loss_.fill_(loop.at("tr_loss").get<double>());
  total_loss_scalar_ = loop.at("total_loss_scalar").get<double>();
  globalstep_last_logged_ = loop.at("globalstep_last_logged").get<int64_t>();

  DataPosition pos{loop.at("epoch_index").get<int64_t>(),
                   loop.at("batches_consumed_in_epoch").get<int64_t>()};
  if (pos.batches_consumed >= steps_in_epoch) {  // saved at the end of an epoch
    pos.epoch += 1;
    pos.batches_consumed = 0;
  }
  if (args_.ignore_data_skip) pos.batches_consumed = 0;  // HF: restart the epoch's data
  if (pos.batches_consumed % args_.gradient_accumulation_steps != 0)
    throw std::runtime_error(folder + ": saved inside an accumulation window (batch " +
                             std::to_string(pos.batches_consumed) + "); cannot resume exactly");
  logging::logger()->info("Resuming from {}: global step {}, epoch {}, skipping {} batches", folder,
                          state_.global_step, pos.epoch, pos.batches_consumed);
  return pos;
}

void Trainer::restore_rng(const std::string& folder) {
  const fs::path path = fs::path(folder) / rng_file(process_);
  restore_rng_state(rng_state_from_json(read_json(path)));
}

void Trainer::load_best_model() {
  if (!state_.best_model_checkpoint) return;
  const std::string& best = *state_.best_model_checkpoint;
  if (auto problem = verify_checkpoint(best)) {
    logging::logger()->warn("could not load the best model from {}: {}", best, *problem);
    return;
  }
  logging::logger()->info("Loading best model from {} (score: {}).", best,
                          state_.best_metric ? std::to_string(*state_.best_metric) : "?");
  load_model_weights(best);
}

}  // namespace ctrainer
