// Trainer's side of checkpoints: what goes into checkpoint-<step> and how a resumed run takes it
// back (CheckpointManager owns the folders and their files; docs/checkpoint-format.md), the best
// model at the end, and the checkpoint-and-exit of a preempted run.
#include <cstdio>

#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>
#include <ctrainer/trainer/checkpoint/checkpoint_manager.h>
#include <ctrainer/trainer/runtime/logging.h>
#include <ctrainer/trainer/signals/preemption.h>
#include <ctrainer/trainer/trainer.h>

namespace ctrainer {

CheckpointParts Trainer::checkpoint_parts() {
  return {model_.get(), optimizer_.get(), lr_scheduler_.get(), precision_->grad_scaler()};
}

std::string Trainer::save_checkpoint() {
  // Collective, as the loss below: trainer_state.json holds every rank's tokens so far.
  input_tokens_.add_pending_to(*strategy_, state_.num_input_tokens_seen);
  if (is_new_best_) {
    state_.best_model_checkpoint = checkpoint_path(args_.output_dir, state_.global_step).string();
    is_new_best_ = false;
  }
  // Collective: each rank sums its own losses; the checkpoint keeps every rank's sum, which that
  // rank restores, so the next logged mean over ranks is bitwise the uninterrupted run's (and
  // their mean, for a reader).
  LoopState loop;
  if (tr_loss_.defined()) {
    loop.tr_loss = strategy_->mean_across_processes(tr_loss_).item<double>();
    for (const at::Tensor& sum : strategy_->all_gather(tr_loss_.reshape({1})))
      loop.tr_loss_by_rank.push_back(sum.item<double>());
  }
  loop.total_loss_scalar = total_loss_scalar_;
  loop.globalstep_last_logged = globalstep_last_logged_;
  loop.position = position_;
  loop.shape = loop_shape();
  // Where this rank's sampler stands (position = batches consumed).
  SamplerState sampler;
  if (train_dataloader_) sampler = train_dataloader_->state(position_.batches_consumed);
  sampler.epoch = position_.epoch;
  sampler.position = position_.batches_consumed;
  // As HF: the control's flags at the moment of the save (should_save true, ...).
  state_.stateful_callbacks["TrainerControl"] = control_.state();

  const auto folder = checkpoints_->save(checkpoint_parts(), state_, loop, sampler);
  control_.should_save = false;
  fire(&TrainerCallback::on_save);
  return folder.string();
}

DataPosition Trainer::resume_from(const std::filesystem::path& folder, const TrainingPlan& plan) {
  LoadedCheckpoint loaded =
      checkpoints_->load(folder, checkpoint_parts(), plan.shape, plan.batches_per_epoch);
  state_.continue_from(std::move(loaded.state));
  for (const auto& callback : callbacks_.callbacks())
    if (state_.stateful_callbacks.contains(callback->name()))
      callback->restore_state(state_.stateful_callbacks.at(callback->name()));
  // A sharded checkpoint may resume on another number of processes: then each takes the mean.
  const auto& by_rank = loaded.loop.tr_loss_by_rank;
  const bool same_world = static_cast<int64_t>(by_rank.size()) == strategy_->world_size();
  tr_loss_.fill_(same_world ? by_rank.at(process_.rank) : loaded.loop.tr_loss);
  total_loss_scalar_ = loaded.loop.total_loss_scalar;
  globalstep_last_logged_ = loaded.loop.globalstep_last_logged;
  return loaded.position;
}

void Trainer::exit_on_signal(int signal) {
  train_batches_.reset();  // stop and join the loader's workers before std::exit
  // The step that was running when the signal came has finished; checkpoint it unless the
  // regular schedule just did.
  const std::string folder = checkpoints_->has_complete(state_.global_step)
                                 ? checkpoint_path(args_.output_dir, state_.global_step).string()
                                 : save_checkpoint();
  logging::logger()->warn(
      "received {} at step {}: checkpoint {} written; exiting with code {}. "
      "Resume with --resume_from_checkpoint latest.",
      Preemption::name(signal), state_.global_step, folder, SignalGuard::exit_code(signal));
  logging::logger()->flush();
  std::fflush(stdout);
  std::fflush(stderr);
  std::exit(SignalGuard::exit_code(signal));
}

}  // namespace ctrainer
